package httpapi

import (
	"context"
	"net/http"

	"example.com/obsvc/api/rest"
)

// A POST /logs batch is parsed once. The validator decodes it while checking it (logsChecker)
// and hands the batch on in the request's context; createLogsOnce serves createLogs from that
// batch instead of letting the generated strict handler decode the body a second time, which
// was about a quarter of the service's CPU under ingest. Everything else about the operation
// (parameter binding, the handler, the answers) is the generated code's.

type decodedLogsKey struct{}

// withDecodedLogs returns r carrying batch, the checked and decoded body of createLogs.
func withDecodedLogs(r *http.Request, batch rest.CreateLogsJSONRequestBody) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), decodedLogsKey{}, batch))
}

// createLogsOnce is the generated ServerInterface with createLogs served from the batch the
// validator decoded. A request without one (a batch over decodeOnceMax) goes to the generated
// strict handler, which decodes the body.
type createLogsOnce struct {
	rest.ServerInterface
	srv      *server
	problems problemWriter
}

// CreateLogs serves a decoded batch as the strict handler would: the same handler, the same
// response visitor, errors answered by the same problem writer.
func (c createLogsOnce) CreateLogs(w http.ResponseWriter, r *http.Request, params rest.CreateLogsParams) {
	batch, ok := r.Context().Value(decodedLogsKey{}).(rest.CreateLogsJSONRequestBody)
	if !ok || batch == nil {
		c.ServerInterface.CreateLogs(w, r, params)
		return
	}
	resp, err := c.srv.CreateLogs(r.Context(), rest.CreateLogsRequestObject{Params: params, JSONBody: &batch})
	if err != nil {
		c.problems.write(w, r, err)
		return
	}
	if err := resp.VisitCreateLogsResponse(w); err != nil {
		c.problems.write(w, r, err)
	}
}
