package tui

import "testing"

func benchModel(b *testing.B) *Model {
	m, fb := newTest(b, Options{})
	size(m, 120, 40)
	load(b, m, fb, fakeSnapshot(1000, 100000))
	press(m, "2")
	m.View()
	return m
}

func BenchmarkView(b *testing.B) {
	m := benchModel(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = m.View()
	}
}

func BenchmarkKeyToFrame(b *testing.B) {
	m := benchModel(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		press(m, "j")
		_ = m.View()
		press(m, "/")
		typeText(m, "c-00")
		_ = m.View()
		press(m, "esc")
		_ = m.View()
	}
}
