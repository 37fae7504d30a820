// Spot prices: the price now of the spot instance types in use, read from
// DescribeSpotPriceHistory at a listing every SpotPriceInterval; a spot
// instance's CurrentPrice is its type's in its zone, which the pool bills
// it at (docs/design.md §6.1).

package ec2

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// spotProduct is the product whose prices are read: the instances run
// Linux.
const spotProduct = "Linux/UNIX"

type spotKey struct{ typ, zone string }

type spotPoint struct {
	price float64
	at    time.Time
}

// spotPrices is the last read of the spot prices.
type spotPrices struct {
	mu     sync.Mutex
	at     time.Time // when last read; zero: never
	prices map[spotKey]spotPoint
	err    error // why the last read failed; nil when it worked
}

// readSpotPrices reads the prices of the spot types among listed, when the
// last read is SpotPriceInterval old. A failed read drops the prices: the
// configured price holds until a read works again.
func (d *Driver) readSpotPrices(ctx context.Context, listed []types.Instance) {
	now := d.opts.Now()
	s := &d.spot
	s.mu.Lock()
	due := s.at.IsZero() || now.Sub(s.at) >= d.opts.SpotPriceInterval
	s.mu.Unlock()
	if !due {
		return
	}
	var typs []types.InstanceType
	for _, li := range listed {
		live := li.State == nil || li.State.Name != types.InstanceStateNameTerminated
		if li.InstanceLifecycle == types.InstanceLifecycleTypeSpot && live && !slices.Contains(typs, li.InstanceType) {
			typs = append(typs, li.InstanceType)
		}
	}
	if len(typs) == 0 {
		return // nothing to price: read at the first listing with a spot instance
	}
	slices.Sort(typs)
	in := &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes:       typs,
		ProductDescriptions: []string{spotProduct},
		StartTime:           aws.Time(now), // the price in effect now
	}
	prices := map[spotKey]spotPoint{}
	var err error
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(d.client, in)
	for pages.HasMorePages() && err == nil {
		out, e := pages.NextPage(ctx)
		if e != nil {
			err = d.mapError("read spot prices", "", e)
			break
		}
		for _, sp := range out.SpotPriceHistory {
			p, e := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
			if e != nil || p <= 0 {
				continue
			}
			k := spotKey{string(sp.InstanceType), aws.ToString(sp.AvailabilityZone)}
			if old, ok := prices[k]; !ok || aws.ToTime(sp.Timestamp).After(old.at) {
				prices[k] = spotPoint{price: p, at: aws.ToTime(sp.Timestamp)}
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = now
	if err != nil {
		d.log.Warn("ec2: spot prices unavailable: the configured prices hold", "err", err)
		s.prices, s.err = nil, err
		return
	}
	s.prices, s.err = prices, nil
}

// spotPrice is the price now of a spot instance of typ in zone: the zone's,
// else (the zone unknown, or not in the history) the dearest zone's, so
// as not to bill it short.
func (d *Driver) spotPrice(typ, zone string) (float64, bool, error) {
	s := &d.spot
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, false, fmt.Errorf("spot price history unavailable: %w", s.err)
	}
	if s.at.IsZero() {
		return 0, false, nil // not read yet: the configured price, without a word
	}
	if p, ok := s.prices[spotKey{typ, zone}]; ok {
		return p.price, true, nil
	}
	best, found := 0.0, false
	for k, p := range s.prices {
		if k.typ == typ && p.price > best {
			best, found = p.price, true
		}
	}
	if !found {
		return 0, false, fmt.Errorf("spot price history has no price for %s", typ)
	}
	return best, true, nil
}

// CurrentPrice implements cloud.Priced: a spot instance's price now; an
// on-demand one's does not move.
func (i *Instance) CurrentPrice() (price float64, known bool, err error) {
	d := i.Snapshot()
	if !d.Extra.spot {
		return 0, false, nil
	}
	return i.d.spotPrice(d.ProviderType, d.Extra.zone)
}
