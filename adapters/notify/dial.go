package notify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// internalPrefixes are the ranges a delivery may not connect to unless its host:port is listed
// as itself in ALERT_TARGETS, beside what netip's predicates cover (loopback, link-local,
// private, unspecified, multicast).
var internalPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast included
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: an IPv4 address behind an IPv6 one
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2002::/16"),       // 6to4: an IPv4 address inside
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated
}

// internalReason says why ip is an internal address, or "" when it is a public one.
func internalReason(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsPrivate():
		return "private"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsMulticast():
		return "multicast"
	}
	for _, p := range internalPrefixes {
		if p.Contains(ip) {
			return "reserved"
		}
	}
	// An IPv4-compatible IPv6 address (::a.b.c.d) reaches a.b.c.d on some stacks.
	if ip.Is6() {
		b := ip.As16()
		if [12]byte(b[:12]) == [12]byte{} {
			return "reserved"
		}
	}
	return ""
}

// ErrRefusedAddress is the cause of a delivery refused because its host resolved to an internal
// address (loopback, link-local, private, CGNAT, unspecified, multicast, reserved) and its
// host:port is not listed as itself in ALERT_TARGETS.
var ErrRefusedAddress = errors.New("address refused")

// refusedError is the dialer's refusal: what it says is safe to show the rule's owner (the host,
// the address it resolved to, why), and it is ErrRefusedAddress.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }
func (e *refusedError) Unwrap() error { return ErrRefusedAddress }

// Lookup resolves a host name to its addresses, as net.Resolver.LookupNetIP(ctx, "ip", host).
type Lookup func(ctx context.Context, host string) ([]netip.Addr, error)

// dialer connects to a delivery's host: it resolves the name, then dials each address in turn
// with a Control hook that checks the address the socket is about to connect to, the one place
// where a name that resolves (or re-resolves) to an internal address is caught.
type dialer struct {
	allow   AllowList
	lookup  Lookup
	timeout time.Duration
}

// dialContext is the transport's DialContext. addr is the target's host:port: redirects are never
// followed and no proxy is used, so it is always the host the rule names.
func (d dialer) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", network, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("dial %s: bad port %q", network, portText)
	}
	explicit := d.allow.Explicit(host, port)
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		if ips, err = d.lookup(ctx, host); err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("resolve %s: no address", host)
		}
	}
	nd := net.Dialer{
		Timeout: d.timeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &refusedError{fmt.Sprintf("%q is not an address", address)}
			}
			if reason := internalReason(ap.Addr()); reason != "" && !explicit {
				return &refusedError{fmt.Sprintf("%s resolves to %s, a %s address, and %s is not listed as itself in ALERT_TARGETS",
					host, ap.Addr().Unmap(), reason, net.JoinHostPort(host, portText))}
			}
			return nil
		},
	}
	var errs []error
	for _, ip := range ips {
		conn, err := nd.DialContext(ctx, network, netip.AddrPortFrom(ip.Unmap(), uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// newClient is the one HTTP client every delivery uses: its own dialer, no proxy (a proxy would
// connect on our behalf, past the address check), no redirects, short timeouts.
func newClient(d dialer, total time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.dialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    d.timeout,
		ResponseHeaderTimeout:  total,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           16,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: 16 << 10,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   total,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
