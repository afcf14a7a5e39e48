package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"example.com/obsvc/domain"
)

// translate turns a driver or database/sql error into a domain error, so that no driver type
// leaves this package. op names what was being done, for logs.
func (s *Store) translate(op string, err error) error {
	if err == nil {
		return nil
	}
	var de *domain.Error
	switch {
	case errors.As(err, &de):
		return err
	case errors.Is(err, sql.ErrNoRows):
		return &domain.Error{Kind: domain.KindNotFound, Msg: "not found", Err: err}
	case s.eng.classify(err) == errForeignKey:
		return &domain.Error{Kind: domain.KindUnknownProject, Msg: "unknown project", Err: fmt.Errorf("%s: %w", op, err)}
	case isConnectionError(err) || s.eng.classify(err) == errUnavailable:
		return domain.Unavailable(fmt.Errorf("%s: %w", op, err))
	}
	return fmt.Errorf("%s: %w", op, err)
}

// isConnectionError reports failures that say the database cannot be reached or the pool is gone,
// whatever the engine: these are worth a retry later, not a 500.
func isConnectionError(err error) bool {
	var ne net.Error
	return errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) || // the request ended first: no answer is owed, but never a 500
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || // the server closed the connection under a statement
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &ne)
}
