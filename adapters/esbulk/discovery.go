package esbulk

import (
	"net"
	"net/http"
)

// Version is the Elasticsearch version the service answers as: 8, the major version every
// shipper below speaks without the removed mapping types (rsyslog and Logstash read the major
// version from GET / to decide whether to send _type).
const Version = "8.17.0"

// ClusterName names the service in the discovery answers.
const ClusterName = "obsvc"

// discoveryPaths are the paths (and their subpaths) of the discovery calls, for IsRoute.
var discoveryPaths = []string{"/_license", "/_xpack", "/_nodes", "/_cluster/health"}

// registerDiscovery mounts the calls shippers make before their first bulk request, answered
// with what they need and nothing more; each names the shipper that needs it.
func (h *Handler) registerDiscovery(mux *http.ServeMux, wrap func(http.Handler) http.Handler) {
	for _, r := range []struct {
		pattern string
		serve   http.HandlerFunc
	}{
		// Every official client (Go, node) checks the product header of its first answer, and
		// rsyslog's omelasticsearch, Logstash, Filebeat and Vector read the version here at start;
		// HEAD / is the node client's and Filebeat's ping. GET serves HEAD too.
		{"GET /{$}", serveInfo},
		// Filebeat and Logstash ask for the licence before they load templates and ILM policies.
		{"GET /_license", serveLicense},
		// Logstash's monitoring and its output's licence check.
		{"GET /_xpack", serveXPack},
		// Not served: Filebeat's and Logstash's index templates and ILM policies
		// (/_index_template/{name}, /_ilm/policy/{name}), which an entry's fixed mapping has no
		// use for; those shippers are configured not to install them (README). Their paths would
		// also be ambiguous beside /{index}/_bulk in openapi.yaml.
		// The official clients' sniffing (sniffOnStart, DiscoverNodesOnStart) lists the nodes to
		// send to: this one, at the address it was reached at.
		{"GET /_nodes/http", serveNodes},
		{"GET /_nodes/_all/http", serveNodes},
		// Vector's healthcheck of its elasticsearch sink.
		{"GET /_cluster/health", serveHealth},
	} {
		mux.Handle(r.pattern, wrap(withProduct(r.serve)))
	}
}

func withProduct(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(ProductHeader, ProductName)
		next(w, r)
	})
}

func serveInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, map[string]any{
		"name":         ClusterName,
		"cluster_name": ClusterName,
		"cluster_uuid": "obsvc-logs",
		"version": map[string]any{
			"number":                              Version,
			"build_flavor":                        "default",
			"build_type":                          "obsvc",
			"build_hash":                          "obsvc",
			"build_date":                          "2026-01-01T00:00:00.000Z",
			"build_snapshot":                      false,
			"lucene_version":                      "9.12.0",
			"minimum_wire_compatibility_version":  "7.17.0",
			"minimum_index_compatibility_version": "7.0.0",
		},
		"tagline": "You Know, for Search",
	})
}

func serveLicense(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, map[string]any{"license": map[string]any{
		"status": "active", "uid": "obsvc", "type": "basic", "issue_date": "2026-01-01T00:00:00.000Z",
		"issue_date_in_millis": 1767225600000, "max_nodes": 1000, "issued_to": ClusterName, "issuer": "elasticsearch",
		"start_date_in_millis": -1,
	}})
}

func serveXPack(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, map[string]any{
		"build":    map[string]any{"hash": "obsvc", "date": "2026-01-01T00:00:00.000Z"},
		"license":  map[string]any{"uid": "obsvc", "type": "basic", "mode": "basic", "status": "active"},
		"features": map[string]any{},
	})
}

func serveNodes(w http.ResponseWriter, r *http.Request) {
	addr := r.Host
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "80")
	}
	writeJSON(w, r, http.StatusOK, map[string]any{
		"_nodes":       map[string]any{"total": 1, "successful": 1, "failed": 0},
		"cluster_name": ClusterName,
		"nodes": map[string]any{"obsvc": map[string]any{
			"name": ClusterName, "version": Version, "roles": []string{"data", "ingest", "master"},
			"http": map[string]any{"publish_address": addr, "bound_address": []string{addr}},
		}},
	})
}

func serveHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, map[string]any{
		"cluster_name": ClusterName, "status": "green", "timed_out": false, "number_of_nodes": 1, "number_of_data_nodes": 1,
	})
}
