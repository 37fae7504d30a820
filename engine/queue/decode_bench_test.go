package queue

import (
	"encoding/json"
	"testing"
)

// BenchmarkDecodeContainer decodes the records of a pass and richer ones
// (richRecords) as a start-up does, by encoding/json (json) and by
// decodeContainer (reader).
func BenchmarkDecodeContainer(b *testing.B) {
	pass, _ := benchRecords()
	for _, bc := range []struct {
		name string
		cs   []Container
	}{{"pass", pass}, {"rich", richRecords(pass)}} {
		var js [][]byte
		for i := range bc.cs {
			j, err := appendContainer(nil, &bc.cs[i])
			if err != nil {
				b.Fatal(err)
			}
			js = append(js, j)
		}
		for _, dec := range []struct {
			name string
			fn   func([]byte, *Container) error
		}{
			{"json", func(j []byte, c *Container) error { return json.Unmarshal(j, c) }},
			{"reader", decodeContainer},
		} {
			b.Run(bc.name+"/"+dec.name, func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					var c Container
					if err := dec.fn(js[i%len(js)], &c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
