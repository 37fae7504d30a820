// Sizes ("2GiB") as people write them in specs, the config and the CLI, and as the CLI and the console show them.

package view

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// sizeUnit is one unit accepted by ParseSize.
type sizeUnit struct {
	name string
	mult int64
}

// Binary units come first: FormatSize prefers them when two spellings are
// equally short.
var sizeUnits = []sizeUnit{
	{"PiB", 1 << 50}, {"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"PB", 1e15}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
	{"B", 1},
}

// SizeAlphabet is every byte FormatSize writes, lower-case: its digits,
// sign and point, and its units' letters (a console's filter skips the
// sizes of a text with another byte).
var SizeAlphabet = func() string {
	abc := "-.0123456789"
	for _, u := range sizeUnits {
		for _, c := range strings.ToLower(u.name) {
			if !strings.ContainsRune(abc, c) {
				abc += string(c)
			}
		}
	}
	return abc
}()

// maxSizeLen bounds the input ParseSize looks at, so that absurd inputs
// cost nothing.
const maxSizeLen = 64

// ParseSize parses a byte size: a plain number of bytes ("100") or a number
// with a unit ("2GiB", "512MiB", "10GB", "1.5GiB", "2 GiB"). KiB, MiB, GiB,
// TiB and PiB are powers of 1024; KB, MB, GB, TB and PB powers of 1000; B is
// bytes. Units are matched case-insensitively. A fractional result is
// rounded to the nearest byte. Negative sizes are rejected.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("invalid size %q: empty", s)
	}
	if len(t) > maxSizeLen {
		return 0, fmt.Errorf("invalid size %q: too long", s)
	}
	if t[0] == '-' {
		return 0, fmt.Errorf("invalid size %q: must not be negative", s)
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	intPart, frac, hasDot := strings.Cut(num, ".")
	if intPart == "" || (hasDot && (frac == "" || strings.Contains(frac, "."))) {
		return 0, fmt.Errorf("invalid size %q: want a number of bytes or a number with a unit, like \"2GiB\" or \"512MiB\"", s)
	}
	mult := int64(1)
	if unit != "" {
		found := false
		for _, u := range sizeUnits {
			if strings.EqualFold(unit, u.name) {
				mult, found = u.mult, true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("invalid size %q: unknown unit %q (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", s, unit)
		}
	}
	// Exact arithmetic: (digits * mult) / 10^len(frac), rounded half up.
	n, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	n.Mul(n, big.NewInt(mult))
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil)
	q, r := new(big.Int).QuoRem(n, den, new(big.Int))
	if r.Lsh(r, 1).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return q.Int64(), nil
}

// FormatSize formats n bytes as the shortest exact spelling with a unit
// that ParseSize accepts (at most three decimals, and only below 1000 of
// the unit), preferring binary units, else as bytes:
// 2147483648 → "2GiB", 536870912 → "512MiB", 1610612736 → "1.5GiB",
// 10000000000 → "10GB", 100 → "100B", 1025 → "1025B".
// ParseSize(FormatSize(n)) == n.
func FormatSize(n int64) string {
	if n < 0 {
		if n == -n { // math.MinInt64
			return strconv.FormatInt(n, 10) + "B"
		}
		return "-" + FormatSize(-n)
	}
	best := ""
	for _, u := range sizeUnits {
		if u.mult == 1 || n < u.mult {
			continue
		}
		q, r := n/u.mult, n%u.mult
		var s string
		if r == 0 {
			s = strconv.FormatInt(q, 10) + u.name
		} else {
			// Fractions only for small quantities ("1.5GiB", not
			// "1073741.825KB"). r < 2^50, so r*1000 cannot overflow.
			if q >= 1000 || (r*1000)%u.mult != 0 {
				continue
			}
			f := strings.TrimRight(fmt.Sprintf("%03d", r*1000/u.mult), "0")
			s = strconv.FormatInt(q, 10) + "." + f + u.name
		}
		if best == "" || len(s) < len(best) {
			best = s
		}
	}
	if best == "" {
		return strconv.FormatInt(n, 10) + "B"
	}
	return best
}
