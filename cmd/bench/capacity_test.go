package main

import (
	"bytes"
	"os"
	"testing"
)

// TestCapacityDocMatchesBenchFigures fails when docs/capacity.md is not
// what the generator makes of the committed figures: the model's numbers
// come from the latest bench run, never typed in (make bench rewrites both;
// go run ./cmd/bench capacity -out docs/capacity.md regenerates the page).
func TestCapacityDocMatchesBenchFigures(t *testing.T) {
	figs, err := readFigures("../../docs/bench/latest.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want, err := capacityDoc(figs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/capacity.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/capacity.md differs from what docs/bench/latest.jsonl gives: run go run ./cmd/bench capacity -out docs/capacity.md")
	}
}

// TestCapacityModelFollowsTheFigures checks the model's arithmetic on
// figures of its own: twice the CPU per item needs twice the cores, twice
// the bytes twice the disk, and more volume never fewer machines.
func TestCapacityModelFollowsTheFigures(t *testing.T) {
	in := capacityInput{E2E: 80000, HTTP: 130000, ServiceCPU: 10, CHCPU: 12, BytesPerItem: 30, RSSMiB: 400}
	a := capacityModel(in)
	in.ServiceCPU, in.CHCPU, in.BytesPerItem = 20, 24, 60
	b := capacityModel(in)
	for i := range a {
		if r := b[i].ServiceCores / a[i].ServiceCores; r < 1.999 || r > 2.001 {
			t.Errorf("%s: service cores x%.3f, want x2", a[i].Scale, r)
		}
		if r := b[i].DiskTiB / a[i].DiskTiB; r < 1.999 || r > 2.001 {
			t.Errorf("%s: disk x%.3f, want x2", a[i].Scale, r)
		}
		if i > 0 && (a[i].Nodes < a[i-1].Nodes || a[i].Instances < a[i-1].Instances) {
			t.Errorf("%s needs fewer machines than %s: %+v vs %+v", a[i].Scale, a[i-1].Scale, a[i], a[i-1])
		}
	}
	// 1 B items a day: 11,574/s on average, 34,722/s at peak.
	if r := a[1]; r.AvgRate < 11574 || r.AvgRate > 11575 || r.PeakRate < 34722 || r.PeakRate > 34723 {
		t.Errorf("1 B a day: %.1f / %.1f items/s", r.AvgRate, r.PeakRate)
	}
}
