package domain

import "context"

// Hat is a hat made to measure.
type Hat struct {
	Inches int32
	Color  string
	Name   string
}

// Random is the source of the haberdasher's choices; tests pass a deterministic one.
type Random interface {
	// IntN returns a number in [0, n).
	IntN(n int) int
}

// hatColors is the palette. It never holds "invisible".
var hatColors = [...]string{"white", "black", "brown", "red", "blue", "green", "grey", "navy", "burgundy", "olive"}

// hatNames are the kinds of hat, each one plain word.
var hatNames = [...]string{"bowler", "fedora", "beret", "trilby", "boater", "stetson", "beanie", "cloche", "panama", "homburg"}

// HatColors returns the palette MakeHat chooses from.
func HatColors() []string { return append([]string(nil), hatColors[:]...) }

// HatNames returns the kinds of hat MakeHat chooses from.
func HatNames() []string { return append([]string(nil), hatNames[:]...) }

// MakeHat makes a hat of the given size in a random colour and of a random kind. inches must be
// positive (KindInvalid on "inches" otherwise); there is no upper limit.
func (s *Service) MakeHat(ctx context.Context, inches int32) (Hat, error) {
	if _, ok := PrincipalFrom(ctx); !ok {
		return Hat{}, Errorf(KindUnauthenticated, "authentication required")
	}
	if inches <= 0 {
		return Hat{}, ParamError("inches", "must be positive")
	}
	return Hat{
		Inches: inches,
		Color:  hatColors[s.rand.IntN(len(hatColors))],
		Name:   hatNames[s.rand.IntN(len(hatNames))],
	}, nil
}
