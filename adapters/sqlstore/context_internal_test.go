package sqlstore

import "testing"

// TestUUIDv7Time: the moment of a UUIDv7, and nothing for other texts.
func TestUUIDv7Time(t *testing.T) {
	for _, c := range []struct {
		id string
		ms int64
		ok bool
	}{
		{"01936f0e-9a10-7c2d-8e3f-4a5b6c7d8e9f", 0x01936f0e9a10, true},
		{"00000000-0000-7000-8000-000000000000", 0, true},
		{"01936f0e-9a10-4c2d-8e3f-4a5b6c7d8e9f", 0, false}, // version 4
		{"01936f0e9a107c2d8e3f4a5b6c7d8e9f", 0, false},
		{"0193xf0e-9a10-7c2d-8e3f-4a5b6c7d8e9f", 0, false},
		{"", 0, false},
	} {
		ms, ok := uuidv7Time(c.id)
		if ms != c.ms || ok != c.ok {
			t.Errorf("uuidv7Time(%q) = %d, %v; want %d, %v", c.id, ms, ok, c.ms, c.ok)
		}
	}
}
