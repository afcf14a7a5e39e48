package main

import (
	"bytes"
	"strings"
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

func TestRetentionDutyMustBeAFraction(t *testing.T) {
	for _, v := range []string{"0", "-0.5", "1.5", "NaN", "half"} {
		var out bytes.Buffer
		_, err := parseConfig(nil, getenvFrom(map[string]string{"RETENTION_DUTY": v}), &out)
		if err == nil || !strings.Contains(err.Error(), "RETENTION_DUTY") {
			t.Errorf("RETENTION_DUTY=%s: %v, want an error naming it", v, err)
		}
	}
	var out bytes.Buffer
	if c, err := parseConfig(nil, getenvFrom(map[string]string{"RETENTION_DUTY": "1"}), &out); err != nil || c.RetentionDuty != 1 {
		t.Errorf("RETENTION_DUTY=1: %v, %v; want accepted", c.RetentionDuty, err)
	}
}
