// Which listeners the API refuses: tokens without TLS off loopback, TCP without a token.

package api

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// CheckListen refuses a TCP listener that would take requests without a
// token (tokens is how many are configured), and one that would carry
// tokens in clear (no TLS) anywhere but on a loopback address.
func CheckListen(addr string, tokens int, tls bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("dispatcher.listen %q: %v (want host:port, e.g. 127.0.0.1:9006)", addr, err)
	}
	if tokens == 0 {
		return fmt.Errorf("refusing to serve the API on %s without a token: set dispatcher.token, token_file or [[dispatcher.tokens]] (local users need none: they use the socket in the state dir)", addr)
	}
	if !tls && !IsLoopback(host) {
		if host == "" {
			host = "every interface"
		}
		return fmt.Errorf("refusing plain HTTP on %s (%s): tokens would travel in clear; use TLS (dispatcher.tls = \"auto\" or \"on\") or listen on 127.0.0.1", addr, host)
	}
	return nil
}

// IsLoopback reports whether host (no port) is a loopback address or
// "localhost".
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
