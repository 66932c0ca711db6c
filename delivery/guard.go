package delivery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
)

// RefusedAddressError reports a dial to an address that the SSRF guard
// refuses: one inside the service's own networks rather than the internet.
type RefusedAddressError struct {
	Addr netip.Addr
	// Why names the address's class: loopback, private, link-local, ...
	Why string
}

func (e *RefusedAddressError) Error() string {
	return fmt.Sprintf("refused to connect to %s (%s address); allow it with --webhook-allow-cidrs", e.Addr, e.Why)
}

// blockedPrefixes are the special-purpose networks (RFC 6890 and its
// successors) that the net/netip predicates do not cover.
var blockedPrefixes = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	// IPv6 addresses that embed an IPv4 one, which a host, a translator
	// or a relay may take to mean that IPv4 address (::127.0.0.1, the
	// deprecated IPv4-compatible form of 127.0.0.1): refused whatever
	// they embed, as no receiver needs them. IPv4-mapped addresses
	// (::ffff:127.0.0.1) are their IPv4 address (classify).
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2001:2::/48"), "benchmarking"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
}

// classify returns why addr is refused, or "" for a public address.
func classify(addr netip.Addr) string {
	addr = addr.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	switch {
	case addr.IsLoopback():
		return "loopback"
	case addr.IsPrivate():
		return "private"
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		return "link-local"
	case addr.IsUnspecified():
		return "unspecified"
	case addr.IsMulticast():
		return "multicast"
	case addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	}
	for _, b := range blockedPrefixes {
		if b.prefix.Contains(addr) {
			return b.why
		}
	}
	return ""
}

// guard decides which addresses may be dialled.
type guard struct {
	allow []netip.Prefix
}

// check returns a *RefusedAddressError for an address the guard refuses.
func (g guard) check(addr netip.Addr) error {
	addr = addr.Unmap()
	why := classify(addr)
	if why == "" {
		return nil
	}
	for _, p := range g.allow {
		if p.Contains(addr) {
			return nil
		}
	}
	return &RefusedAddressError{Addr: addr, Why: why}
}

// control is a net.Dialer Control function: it runs after the name is
// resolved, on the very address about to be connected, so a name that
// resolves to an internal address (or is re-bound to one between a check
// and the dial) is refused too.
func (g guard) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("delivery: dial %q: %w", address, err)
	}
	return g.check(addr.WithZone(""))
}

// RefusedURL returns why the guard, allowing the networks allow, will
// refuse to connect to rawURL's host, every address of which it refuses
// (a name is resolved, within ctx): the first of them, as the attempts
// will say it; "" when one is allowed (the dialler falls back to it), or
// when the host does not resolve (which the attempts report). An outlet created or changed with such a URL is
// answered with a warning: the guard refuses it when dialling, since a
// name may resolve elsewhere by then.
func RefusedURL(ctx context.Context, allow []netip.Prefix, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	g := guard{allow: allow}
	addrs := []netip.Addr{}
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil {
		addrs = append(addrs, addr)
	} else if addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname()); err != nil {
		return ""
	}
	var first *RefusedAddressError
	for _, addr := range addrs {
		var refused *RefusedAddressError
		if !errors.As(g.check(addr), &refused) {
			return "" // the dialler falls back to an address allowed
		}
		if first == nil {
			first = refused
		}
	}
	if first == nil {
		return ""
	}
	return fmt.Sprintf("the delivery will refuse to connect to %s (%s address); allow it with --webhook-allow-cidrs", first.Addr, first.Why)
}
