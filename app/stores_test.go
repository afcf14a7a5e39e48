package main

// e2eStores lists the stores the end-to-end contract runs against.
func e2eStores() []namedStore {
	return []namedStore{{"sqlite", openSQLiteStore}}
}
