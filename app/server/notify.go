package server

import (
	"fmt"
	"log/slog"

	"example.com/obsvc/adapters/httpapi"
	"example.com/obsvc/adapters/notify"
)

// notifier builds the delivery of alert notifications from ALERT_TARGETS, PUBLIC_URL and the
// alert timeouts; its sample entries are rendered by the same code as GET /logs.
func (c Config) notifier(log *slog.Logger) (*notify.Notifier, error) {
	allow, err := notify.ParseAllowList(c.AlertTargets)
	if err != nil {
		return nil, fmt.Errorf("invalid ALERT_TARGETS: %w", err)
	}
	n, err := notify.New(notify.Options{
		Allow:          allow,
		PublicURL:      c.PublicURL,
		RenderEntry:    httpapi.RenderEntry,
		ConnectTimeout: c.AlertConnectTO,
		Timeout:        c.AlertTimeout,
		Log:            log,
	})
	if err != nil {
		return nil, fmt.Errorf("invalid PUBLIC_URL: %w", err)
	}
	return n, nil
}
