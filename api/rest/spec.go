package rest

import (
	"bytes"
	_ "embed" // the spec, byte for byte
)

// specYAML is openapi.yaml as the code in this package was generated from; make generate copies
// it here and make check-generated keeps the copy identical to the root file.
//
//go:embed openapi.yaml
var specYAML []byte

// SpecYAML returns the OpenAPI document, byte-identical to the repository's openapi.yaml.
func SpecYAML() []byte { return bytes.Clone(specYAML) }
