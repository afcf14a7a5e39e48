package notify_test

import (
	"strings"
	"testing"
	"time"

	"example.com/obsvc/adapters/notify"
	"example.com/obsvc/adapters/notify/amtest"
	"example.com/obsvc/domain"
)

// TestRealAlertmanager delivers a firing, then its resolve, to a real Alertmanager and reads them
// back through its own API: the firing is listed active with the labels and annotations sent,
// then the same alert (one label set: firing_id ties them) is resolved.
func TestRealAlertmanager(t *testing.T) {
	t.Parallel()
	am := amtest.Start(t)
	n := newNotifier(t, am.Addr, nil, nil)
	target := domain.AlertTarget{Type: domain.TargetAlertmanager, URL: am.URL}
	if err := n.CheckTarget(target); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	firing := hostileNote()
	firing.FiringStart, firing.WindowStart, firing.WindowEnd = now-60_000, now-120_000, now-60_000
	firing.ID = "r1-" + time.UnixMilli(firing.FiringStart).Format("20060102150405.000") + "-firing"
	match := map[string]string{"firing_id": notify.FiringID(firing)}

	res, err := n.Deliver(t.Context(), target, firing)
	if err != nil || res.Status != 200 {
		t.Fatalf("deliver the firing: %+v, %v", res, err)
	}
	alerts, err := am.WaitFor(t.Context(), match, 10*time.Second, amtest.Active)
	if err != nil {
		t.Fatalf("Alertmanager does not list the firing as active: %v; it lists %+v", err, alerts)
	}
	a := alerts[0]
	if a.Labels["alertname"] != firing.Name || a.Labels["alert_id"] != "r1" || a.Labels["project_id"] != "p1" {
		t.Errorf("labels %v", a.Labels)
	}
	if a.Annotations["notification_id"] != firing.ID || !strings.Contains(a.Annotations["description"], "payment declined") {
		t.Errorf("annotations %v", a.Annotations)
	}
	checkExplorerURL(t, a.GeneratorURL, firing)
	if !a.StartsAt.Equal(time.UnixMilli(firing.FiringStart)) {
		t.Errorf("startsAt %v, want the firing's start %v", a.StartsAt, time.UnixMilli(firing.FiringStart))
	}

	resolved := firing
	resolved.State, resolved.ID = "resolved", strings.Replace(firing.ID, "-firing", "-resolved", 1)
	resolved.WindowStart, resolved.WindowEnd = now-60_000, now
	res, err = n.Deliver(t.Context(), target, resolved)
	if err != nil || res.Status != 200 {
		t.Fatalf("deliver the resolve: %+v, %v", res, err)
	}
	// The firing was sent with its endsAt a day ahead: only the resolve ends it now.
	alerts, err = am.WaitFor(t.Context(), match, 10*time.Second, amtest.ResolvedOrAbsent)
	if err != nil {
		t.Fatalf("Alertmanager still lists the alert active after its resolve: %v; %+v", err, alerts)
	}
	t.Logf("after the resolve Alertmanager lists %d alert(s) for %v", len(alerts), match)
}
