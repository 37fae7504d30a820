// DescribeSpotPriceHistory: the spot price history a test sets, served as
// EC2 serves it.

package ec2test

import (
	"encoding/xml"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// SpotPrice is one entry of the spot price history: the price of a type
// in a zone from At on.
type SpotPrice struct {
	Type  string
	Zone  string
	Price float64
	At    time.Time
}

// AddSpotPrices appends entries to the history DescribeSpotPriceHistory
// serves.
func (s *Server) AddSpotPrices(ps ...SpotPrice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spotHistory = append(s.spotHistory, ps...)
}

type spotPriceElem struct {
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
	AvailabilityZone   string `xml:"availabilityZone"`
}

type describeSpotPriceHistoryResponse struct {
	XMLName   xml.Name        `xml:"DescribeSpotPriceHistoryResponse"`
	Xmlns     string          `xml:"xmlns,attr"`
	RequestID string          `xml:"requestId"`
	History   []spotPriceElem `xml:"spotPriceHistorySet>item"`
	NextToken string          `xml:"nextToken"`
}

// describeSpotPriceHistory serves the entries of the types asked for (all
// when none is named), newest first as EC2 lists them, each as of its
// time at or before StartTime (when given).
func (s *Server) describeSpotPriceHistory(f url.Values, reqID string) (any, *apiError) {
	typs := list(f, "InstanceType")
	var start time.Time
	if v := f.Get("StartTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, errorf(400, "InvalidParameterValue", "StartTime %q is not a time", v)
		}
		start = t
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := describeSpotPriceHistoryResponse{Xmlns: xmlns, RequestID: reqID}
	for i := len(s.spotHistory) - 1; i >= 0; i-- {
		p := s.spotHistory[i]
		if len(typs) > 0 && !slices.Contains(typs, p.Type) || !start.IsZero() && p.At.After(start) {
			continue
		}
		resp.History = append(resp.History, spotPriceElem{
			InstanceType: p.Type, ProductDescription: "Linux/UNIX", AvailabilityZone: p.Zone,
			SpotPrice: strconv.FormatFloat(p.Price, 'f', 6, 64), Timestamp: p.At.UTC().Format(time.RFC3339),
		})
	}
	return resp, nil
}
