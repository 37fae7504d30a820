package ec2

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A spot instance's price is its zone's; the dearest zone's when its zone
// is not in the history; unknown before the first read; an error when the
// history has no price for its type or could not be read.
func TestSpotPriceByZone(t *testing.T) {
	d := &Driver{}
	if p, known, err := d.spotPrice("t3.small", "eu-west-1a"); known || err != nil || p != 0 {
		t.Errorf("before any read: %v %v %v, want unknown without an error", p, known, err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	d.spot.at = at
	d.spot.prices = map[spotKey]spotPoint{
		{"t3.small", "eu-west-1a"}: {price: 0.0040, at: at},
		{"t3.small", "eu-west-1b"}: {price: 0.0060, at: at},
		{"c5.large", "eu-west-1a"}: {price: 0.0300, at: at},
	}
	for _, tc := range []struct {
		typ, zone string
		want      float64
	}{
		{"t3.small", "eu-west-1a", 0.0040},
		{"t3.small", "eu-west-1b", 0.0060},
		{"t3.small", "eu-west-1c", 0.0060}, // not in the history: the dearest zone
		{"t3.small", "", 0.0060},
		{"c5.large", "", 0.0300},
	} {
		if p, known, err := d.spotPrice(tc.typ, tc.zone); !known || err != nil || p != tc.want {
			t.Errorf("%s in %q: %v %v %v, want %v", tc.typ, tc.zone, p, known, err, tc.want)
		}
	}
	if _, known, err := d.spotPrice("m5.large", "eu-west-1a"); known || err == nil || !strings.Contains(err.Error(), "no price for m5.large") {
		t.Errorf("a type not in the history: %v %v, want an error naming it", known, err)
	}
	d.spot.prices, d.spot.err = nil, errors.New("UnauthorizedOperation")
	if _, known, err := d.spotPrice("t3.small", "eu-west-1a"); known || err == nil || !strings.Contains(err.Error(), "spot price history unavailable: UnauthorizedOperation") {
		t.Errorf("history unavailable: %v %v, want an error saying so", known, err)
	}
}
