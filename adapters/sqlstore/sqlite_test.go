package sqlstore_test

import (
	"testing"

	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

func openSQLite(t *testing.T) domain.Store { return storetest.OpenSQLite(t) }

func TestSQLiteStore(t *testing.T) {
	storetest.Run(t, openSQLite)
}
