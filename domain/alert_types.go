package domain

import "context"

// The types below are shared by the alert use cases (rules, evaluation, outbox) and the adapter
// that delivers notifications. Rules and their transitions are per project.

// AlertState is the state of an alert rule.
type AlertState string

// The states of a rule: ok → pending (the condition holds, for_seconds not yet elapsed) →
// firing → ok (resolved).
const (
	AlertOK      AlertState = "ok"
	AlertPending AlertState = "pending"
	AlertFiring  AlertState = "firing"
)

// The types of an alert target.
const (
	TargetWebhook      = "webhook"
	TargetSlack        = "slack"
	TargetAlertmanager = "alertmanager"
)

// AlertCondition compares the exact count of matching entries in a window with Threshold; Op is
// one of ">", ">=", "<", "<=", "==".
type AlertCondition struct {
	Op        string
	Threshold int64
}

// AlertTarget is where a rule's notifications go. BearerToken, and for Slack the URL itself,
// are secrets: never returned by the API or logged.
type AlertTarget struct {
	Type        string
	URL         string
	BearerToken string
}

// Notification is one message about a rule's firing or its resolve.
type Notification struct {
	// ID is stable per firing and per kind of message: the rule's id, the firing's start (Unix
	// ms) and the state, so that a receiver can deduplicate on it.
	ID        string
	AlertID   string
	Name      string
	ProjectID string
	// State is "firing" or "resolved".
	State string
	Count int64
	// WindowStart and WindowEnd bound the evaluated window, Unix ms, [start, end).
	WindowStart int64
	WindowEnd   int64
	// FiringStart is when the firing began, Unix ms.
	FiringStart int64
	// Query is the rule's query text (its saved search's when it names one).
	Query string
	// Entries are up to 10 of the matching entries, newest first.
	Entries []LogEntry
	// Sample is true for the message of the test button.
	Sample bool
}

// DeliveryResult is a receiver's answer to one delivery.
type DeliveryResult struct {
	// Status is the HTTP status the receiver answered (0 when it did not answer).
	Status int
	// Body is the first bytes of its answer, for the test button's report.
	Body string
}

// Notifier delivers notifications. CheckTarget says whether a target may be used at all (its
// type, its URL's form, the allow-list): KindInvalid with a detail that reads after the field's
// name ("is not in ALERT_TARGETS" …). Deliver sends one notification to one target; an error, or
// a status that is not 2xx, is a failed delivery that is retried.
type Notifier interface {
	CheckTarget(t AlertTarget) error
	Deliver(ctx context.Context, t AlertTarget, n Notification) (DeliveryResult, error)
}
