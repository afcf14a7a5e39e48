package storetest

import (
	"errors"

	"example.com/obsvc/domain"
)

func asError(err error, target **domain.Error) bool { return errors.As(err, target) }

func isError(err, target error) bool { return errors.Is(err, target) }
