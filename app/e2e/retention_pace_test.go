package e2e

import (
	"testing"

	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

// TestRetentionPaceFollowsTheStore: SQLite, one writer, sweeps in small batches, PostgreSQL
// RETENTION_BATCH at a time; both at RETENTION_DUTY.
func TestRetentionPaceFollowsTheStore(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.RetentionDuty = 0.3
	want := map[string]domain.SweepPace{
		"sqlite":   {Batch: server.SingleWriterSweepBatch, Duty: 0.3, Lag: 3 * cfg.RetentionEvery},
		"postgres": {Batch: cfg.RetentionBatch, Duty: 0.3, Lag: 3 * cfg.RetentionEvery},
	}
	for _, s := range e2eStores() {
		w, ok := want[s.name]
		if !ok {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			st := s.open(t)
			if got := cfg.RetentionPace(st); got != w {
				t.Errorf("pace %+v, want %+v", got, w)
			}
			small := cfg
			small.RetentionBatch = 10
			if got := small.RetentionPace(st); got.Batch != 10 {
				t.Errorf("RETENTION_BATCH=10 sweeps %d per transaction", got.Batch)
			}
		})
	}
}
