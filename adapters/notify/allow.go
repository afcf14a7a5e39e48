package notify

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// AllowList is the parsed ALERT_TARGETS: the hosts a rule's targets may name. The zero value
// allows nothing.
type AllowList struct {
	patterns []pattern
}

// pattern is one entry of ALERT_TARGETS: a host ("hooks.slack.com"), every subdomain of one
// ("*.example.com", which does not match example.com itself), or any host ("*"), each with an
// optional port; port 0 is any port.
type pattern struct {
	host     string // lower case; for a subdomain pattern, the suffix with its leading dot
	wildcard bool   // host is a suffix (".example.com"), or empty for any host
	port     int
}

// ParseAllowList reads ALERT_TARGETS: comma-separated `host` or `host:port` patterns, `*.` for
// subdomains, `*` for any host; an IPv6 address is written in brackets ("[fd00::1]:9093").
// Blank entries are skipped; an empty text allows nothing.
func ParseAllowList(text string) (AllowList, error) {
	var a AllowList
	for raw := range strings.SplitSeq(text, ",") {
		entry := strings.TrimSpace(raw)
		if entry == "" {
			continue
		}
		p, err := parsePattern(entry)
		if err != nil {
			return AllowList{}, fmt.Errorf("ALERT_TARGETS entry %q: %w", entry, err)
		}
		a.patterns = append(a.patterns, p)
	}
	return a, nil
}

func parsePattern(entry string) (pattern, error) {
	host, port := entry, 0
	if h, p, err := net.SplitHostPort(entry); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return pattern{}, fmt.Errorf("port %q is not a number from 1 to 65535", p)
		}
		host, port = h, n
	} else if strings.HasPrefix(entry, "[") {
		host = strings.TrimSuffix(strings.TrimPrefix(entry, "["), "]")
	}
	if strings.HasSuffix(host, "*.") {
		return pattern{}, fmt.Errorf("%q names no domain", host)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	switch {
	case host == "*":
		return pattern{wildcard: true, port: port}, nil
	case strings.HasPrefix(host, "*."):
		suffix := host[1:]
		if !validHostname(suffix[1:]) {
			return pattern{}, fmt.Errorf("%q is not a host name", suffix[1:])
		}
		return pattern{host: suffix, wildcard: true, port: port}, nil
	case strings.Contains(host, "*"):
		return pattern{}, fmt.Errorf("a wildcard may only be a leading \"*.\" or \"*\" alone")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return pattern{host: ip.Unmap().String(), port: port}, nil
	}
	if !validHostname(host) {
		return pattern{}, fmt.Errorf("%q is not a host name", host)
	}
	return pattern{host: host, port: port}, nil
}

// validHostname reports whether h is dot-separated labels of letters, digits, '-' and '_'.
func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// canonicalHost is how host is compared with the patterns: lower case, no trailing dot, an IP
// address in its canonical form.
func canonicalHost(host string) string {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().String()
	}
	return host
}

// Allows reports whether host on port matches a pattern.
func (a AllowList) Allows(host string, port int) bool {
	host = canonicalHost(host)
	for _, p := range a.patterns {
		if p.port != 0 && p.port != port {
			continue
		}
		switch {
		case !p.wildcard && host == p.host:
			return true
		case p.wildcard && p.host == "":
			return true
		case p.wildcard && strings.HasSuffix(host, p.host) && len(host) > len(p.host):
			return true
		}
	}
	return false
}

// Explicit reports whether host:port is listed as itself: a pattern naming exactly this host and
// this port, no wildcard. Only such an entry lets a delivery connect to a loopback, link-local,
// private or otherwise internal address.
func (a AllowList) Explicit(host string, port int) bool {
	host = canonicalHost(host)
	for _, p := range a.patterns {
		if !p.wildcard && p.port == port && p.host == host {
			return true
		}
	}
	return false
}

// Empty reports whether the list allows nothing.
func (a AllowList) Empty() bool { return len(a.patterns) == 0 }
