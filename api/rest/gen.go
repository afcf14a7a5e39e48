// Package rest holds the code generated from openapi.yaml: the models, the strict net/http server
// interface, a client and the embedded spec. Nothing here is edited by hand; run `make generate`.
package rest

//go:generate cp ../../openapi.yaml openapi.yaml
//go:generate go tool oapi-codegen -config server.cfg.yaml ../../openapi.yaml
//go:generate go tool oapi-codegen -config client.cfg.yaml ../../openapi.yaml
