// Package clientaddr names the clients of the service's listeners for the
// limits that count per client: the HTTP log-in limits and the SFTP
// server's limits before log-in count under the same key.
package clientaddr

import "net/netip"

// Key is what one client's attempts count under: its IPv4 address, or the
// /64 of an IPv6 one, since a single subscriber is usually given a whole
// /64 and could otherwise use a fresh address, and a fresh budget, for
// every attempt. A string that is no address is its own key.
func Key(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		return netip.PrefixFrom(a, 64).Masked().String()
	}
	return a.String()
}
