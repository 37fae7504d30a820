// Prices that move (EC2 spot): at each listing an instance whose driver
// knows its price now is shown and billed at it; when that price is
// unavailable, at its type's configured price, with one event per provider
// type until it is back (docs/design.md §6.1).

package worker

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"dispatch-tui/cloud"
)

// priceLocked sets w's price from its instance's current price.
func (p *Pool) priceLocked(w *instance, now time.Time) {
	price, known, err := cloud.CurrentPrice(w.inst)
	want, pt := w.itype.Price, w.v.ProviderType
	switch {
	case err != nil:
		if !p.unpriced[pt] {
			p.unpriced[pt] = true
			p.eventLocked(now, w.v.ID, EventPrice, fmt.Sprintf("price of %s unavailable, billed at the configured $%s/h: %v",
				pt, strconv.FormatFloat(want, 'f', 4, 64), err), slog.LevelWarn)
		}
	case known:
		want = price
		if p.unpriced[pt] {
			delete(p.unpriced, pt)
			p.eventLocked(now, w.v.ID, EventPrice, fmt.Sprintf("price of %s available again: $%s/h", pt, strconv.FormatFloat(want, 'f', 4, 64)), slog.LevelInfo)
		}
	}
	if want != w.v.Price {
		w.v.Price = want
		w.rowChanged()
		p.notifyLocked()
	}
}
