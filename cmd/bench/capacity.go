package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"text/template"
)

// The capacity model's assumptions: stated in docs/capacity.md, which
// capacityDoc generates from them and the measured figures.
const (
	peakToAverage     = 3.0  // the busiest minute's rate over the day's average
	cpuHeadroom       = 0.6  // the share of a core the model plans to use at peak
	chIngestShare     = 0.5  // ClickHouse cores for ingest; the rest for reads, merges, alert passes
	serviceCores      = 4    // cores per telemetryd instance
	chCores           = 16   // cores per ClickHouse node
	chRAMPerCoreGiB   = 4    // ClickHouse RAM per core (merges, GROUP BY of reads)
	chDiskPerNodeTiB  = 8.0  // data disk per ClickHouse node
	diskFill          = 0.7  // the share of a disk the model fills (merges need room)
	replicas          = 2    // copies of every shard: one node may fail
	retentionDays     = 90   // the retention the sizing is for
	defaultRetention  = 1096 // storage.retention_days by default
	serviceRAMHeadroo = 2.0  // RAM per instance: the measured peak RSS times this
	minInstances      = 2    // behind a load balancer: one may fail
	// filterIDsPerMiB: ids of the 24-hour window a MiB of the bounded
	// duplicate filter holds at about 1% "maybe"s (docs/exactly-once.md).
	filterIDsPerMiB  = 500_000
	defaultFilterMiB = 64 // ingest.dedup_filter_mib by default, within the measured RSS
)

// capacityScales are the daily volumes the model sizes.
var capacityScales = []struct {
	name  string
	items float64
}{{"10 M", 10e6}, {"1 B", 1e9}, {"10 B", 10e9}}

// runCapacity writes docs/capacity.md from a results file.
func runCapacity(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench capacity", flag.ContinueOnError)
	in := fs.String("in", "docs/bench/latest.jsonl", "results file of a bench run with the ingest part")
	outPath := fs.String("out", "", "write the document here (default: standard output)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	figs, err := readFigures(*in)
	if err != nil {
		return err
	}
	doc, err := capacityDoc(figs)
	if err != nil {
		return err
	}
	if *outPath == "" {
		_, err = out.Write(doc)
		return err
	}
	return os.WriteFile(*outPath, doc, 0o644)
}

// capacityRow is the model at one daily volume.
type capacityRow struct {
	Scale                                   string
	AvgRate, PeakRate                       float64
	ServiceCores, CHIngestCores             float64
	Instances, Shards, Nodes                int
	DiskPerDayGiB, DiskTiB, DiskDefaultTiB  float64
	ServiceRAMGiB, CHRAMGiB, DiskPerNodeTiB float64
	FilterMiB                               float64
	ShardsForCPU, ShardsForDisk             int
}

// capacityInput is what the model takes from a bench run.
type capacityInput struct {
	E2E, HTTP               float64 // items/s, end to end and accepted
	ServiceCPU, CHCPU       float64 // CPU s per million items
	BytesPerItem, BytesAsIs float64 // all tables, after OPTIMIZE FINAL and as they were
	Tables                  []tableBytes
	RSSMiB                  float64
	Items                   float64 // items stored when measured
	LoadAvg                 string
}

type tableBytes struct {
	Name        string
	AsIs, Final float64
}

func capacityInputs(figs []figure) (capacityInput, error) {
	get := func(section, name, metric string) (float64, bool) { return meanOf(figs, section, name, metric) }
	var in capacityInput
	var missing []string
	need := func(dst *float64, section, name, metric string) {
		v, ok := get(section, name, metric)
		if !ok {
			missing = append(missing, section+"/"+name+"/"+metric)
		}
		*dst = v
	}
	need(&in.E2E, "ingest", "full load", "end_to_end_items_per_s")
	need(&in.HTTP, "ingest", "full load", "items_per_s")
	need(&in.ServiceCPU, "ingest", "full load", "service_cpu_s_per_m_items")
	need(&in.CHCPU, "ingest", "full load", "clickhouse_cpu_s_per_m_items")
	need(&in.BytesPerItem, "storage", "all tables", "bytes_per_item_optimized")
	need(&in.BytesAsIs, "storage", "all tables", "bytes_per_item")
	need(&in.RSSMiB, "ingest", "full load", "vmhwm_mib")
	need(&in.Items, "storage", "events", "items")
	if len(missing) > 0 {
		return in, fmt.Errorf("the results lack %s (run the ingest part of make bench)", strings.Join(missing, ", "))
	}
	names := map[string]bool{}
	for _, f := range figs {
		if f.Section == "storage" && f.Name != "all tables" && strings.HasPrefix(f.Metric, "bytes_per_item") {
			names[f.Name] = true
		}
	}
	for n := range names {
		asIs, _ := get("storage", n, "bytes_per_item")
		final, _ := get("storage", n, "bytes_per_item_optimized")
		in.Tables = append(in.Tables, tableBytes{n, asIs, final})
	}
	sort.Slice(in.Tables, func(i, j int) bool { return in.Tables[i].Name < in.Tables[j].Name })
	return in, nil
}

func ceilInt(x float64) int { return int(math.Ceil(x - 1e-9)) }

func capacityModel(in capacityInput) []capacityRow {
	var rows []capacityRow
	for _, s := range capacityScales {
		r := capacityRow{Scale: s.name, AvgRate: s.items / 86400}
		r.PeakRate = r.AvgRate * peakToAverage
		r.ServiceCores = r.PeakRate * in.ServiceCPU / 1e6 / cpuHeadroom
		r.CHIngestCores = r.PeakRate * in.CHCPU / 1e6 / cpuHeadroom
		r.Instances = max(minInstances, ceilInt(r.ServiceCores/serviceCores))
		r.DiskPerDayGiB = s.items * in.BytesPerItem / (1 << 30)
		r.DiskTiB = r.DiskPerDayGiB * retentionDays / 1024
		r.DiskDefaultTiB = r.DiskPerDayGiB * defaultRetention / 1024
		r.ShardsForCPU = ceilInt(r.CHIngestCores / chIngestShare / chCores)
		r.ShardsForDisk = ceilInt(r.DiskTiB / (chDiskPerNodeTiB * diskFill))
		r.Shards = max(1, r.ShardsForCPU, r.ShardsForDisk)
		r.Nodes = r.Shards * replicas
		r.DiskPerNodeTiB = r.DiskTiB / float64(r.Shards)
		// Each instance's filter holds the ids it accepts in 24 hours.
		r.FilterMiB = max(defaultFilterMiB, math.Ceil(s.items/float64(r.Instances)/filterIDsPerMiB))
		r.ServiceRAMGiB = math.Ceil((in.RSSMiB*serviceRAMHeadroo + r.FilterMiB - defaultFilterMiB) / 1024)
		r.CHRAMGiB = chRAMPerCoreGiB * chCores
		rows = append(rows, r)
	}
	return rows
}

// capacityDoc renders docs/capacity.md.
func capacityDoc(figs []figure) ([]byte, error) {
	in, err := capacityInputs(figs)
	if err != nil {
		return nil, err
	}
	if in.E2E <= 0 || in.BytesPerItem <= 0 {
		return nil, errors.New("the results hold no end-to-end rate or no stored bytes")
	}
	data := map[string]any{
		"In": in, "Rows": capacityModel(in),
		"PeakToAverage": peakToAverage, "CPUHeadroom": cpuHeadroom * 100, "CHIngestShare": chIngestShare * 100,
		"ServiceCores": serviceCores, "CHCores": chCores, "CHRAMPerCore": chRAMPerCoreGiB,
		"DiskPerNode": chDiskPerNodeTiB, "DiskFill": diskFill * 100, "Replicas": replicas,
		"Retention": retentionDays, "DefaultRetention": defaultRetention, "RAMHeadroom": serviceRAMHeadroo,
		"MinInstances":    minInstances,
		"FilterIDsPerMiB": filterIDsPerMiB / 1e3, "DefaultFilterMiB": defaultFilterMiB,
		"ItemsPerCoreSecond": 1e6 / (in.ServiceCPU + in.CHCPU),
		"ItemsPerCoreDayB":   86400 / (in.ServiceCPU + in.CHCPU) / 1e3,
	}
	var b bytes.Buffer
	if err := capacityTemplate.Execute(&b, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

var capacityTemplate = template.Must(template.New("capacity").Funcs(template.FuncMap{
	"f": func(prec int, v float64) string { return fmt.Sprintf("%.*f", prec, v) },
	"n": func(v float64) string { return groupThousands(v) },
}).Parse(`# Capacity: sizing an installation

<!-- Generated by ` + "`go run ./cmd/bench capacity`" + ` from docs/bench/latest.jsonl,
which ` + "`make bench`" + ` writes when it runs its ingest part; a test fails when
this file and the figures disagree. Do not edit by hand. -->

This model turns what ` + "`make bench`" + ` measured into a first sizing for 10
million, 1 billion and 10 billion items a day. The figures come from one
run on a **shared, busy 2-core machine** (the load generator, the service,
ClickHouse and PostgreSQL on the same two cores, beside other work), so they
are pessimistic per core; rerun ` + "`make bench`" + ` on the target hardware and
regenerate this file before buying anything.

## What was measured

| figure | value |
|---|---|
| HTTP ingest, full load | {{n .In.HTTP}} items/s |
| end to end (until every item is in ClickHouse) | {{n .In.E2E}} items/s |
| service CPU per million items (telemetryd, /proc) | {{f 1 .In.ServiceCPU}} CPU s |
| ClickHouse CPU per million items (its process, /proc, inserts, views and merges while draining) | {{f 1 .In.CHCPU}} CPU s |
| service peak RSS (VmHWM) | {{f 0 .In.RSSMiB}} MiB |
| bytes on disk per stored item, all tables, after OPTIMIZE FINAL | {{f 1 .In.BytesPerItem}} B |
| the same with the parts as they were after ingest | {{f 1 .In.BytesAsIs}} B |

So one fully busy core ingests about {{n .ItemsPerCoreSecond}} items a second, service and
ClickHouse together ({{f 1 .ItemsPerCoreDayB}} billion a day). Bytes on disk per stored item,
by table ({{n .In.Items}} items in ` + "`events`" + `, as the bench's load generator
makes them):

| table | as ingested | after OPTIMIZE FINAL |
|---|---:|---:|
{{range .In.Tables}}| ` + "`{{.Name}}`" + ` | {{f 2 .AsIs}} B | {{f 2 .Final}} B |
{{end}}
## Assumptions

- Peak rate: {{f 0 .PeakToAverage}}x the day's average.
- CPU: plan {{f 0 .CPUHeadroom}}% of each core at peak. telemetryd instances have
  {{.ServiceCores}} cores; ClickHouse nodes {{.CHCores}} cores, {{.CHRAMPerCore}} GiB of RAM per core and
  {{f 0 .DiskPerNode}} TiB of data disk filled to {{f 0 .DiskFill}}% (merges need the rest).
- ClickHouse spends {{f 0 .CHIngestShare}}% of its cores on ingest (inserts, materialized
  views, merges); the other half serves reads, alert passes and the nightly
  pass.
- {{.Replicas}} replicas of every shard (one node may fail), at least {{.MinInstances}}
  telemetryd instances behind the load balancer.
- Disk is sized for {{.Retention}} days of retention (the default,
  ` + "`storage.retention_days`" + ` = {{.DefaultRetention}}, is shown beside it) with the bytes per item
  measured after OPTIMIZE FINAL; real items with more distinct tools,
  clients or attributes take more.
- telemetryd RAM: the measured peak RSS times {{f 0 .RAMHeadroom}}, plus the duplicate
  filter beyond its default {{.DefaultFilterMiB}} MiB: each instance's filter
  (` + "`ingest.dedup_filter_mib`" + `) holds about {{f 0 .FilterIDsPerMiB}},000 ids of the
  24-hour window per MiB at 1% "maybe"s, each looked up in ClickHouse at
  flush ([exactly-once](exactly-once.md#bounded-memory)); a filter much
  smaller than the instance's ids a day makes most ids "maybe"s, and the
  lookups then slow its flushes.
- PostgreSQL holds accounts, rules and deliveries, not items: one small
  primary with a standby at every scale.

## The model

| items a day | 10 M | 1 B | 10 B |
|---|---:|---:|---:|
| average / peak items/s |{{range .Rows}} {{n .AvgRate}} / {{n .PeakRate}} |{{end}}
| telemetryd cores at peak |{{range .Rows}} {{f 2 .ServiceCores}} |{{end}}
| telemetryd instances ({{.ServiceCores}} cores, RAM each) |{{range .Rows}} {{.Instances}} ({{f 0 .ServiceRAMGiB}} GiB) |{{end}}
| duplicate filter per instance |{{range .Rows}} {{f 0 .FilterMiB}} MiB |{{end}}
| ClickHouse cores for ingest at peak |{{range .Rows}} {{f 2 .CHIngestCores}} |{{end}}
| disk per day (one replica) |{{range .Rows}} {{f 1 .DiskPerDayGiB}} GiB |{{end}}
| disk for {{.Retention}} days (one replica) |{{range .Rows}} {{f 2 .DiskTiB}} TiB |{{end}}
| disk for {{.DefaultRetention}} days (one replica) |{{range .Rows}} {{f 2 .DiskDefaultTiB}} TiB |{{end}}
| shards needed for CPU / for disk |{{range .Rows}} {{.ShardsForCPU}} / {{.ShardsForDisk}} |{{end}}
| ClickHouse shards x replicas = nodes |{{range .Rows}} {{.Shards}} x {{$.Replicas}} = {{.Nodes}} |{{end}}
| per node: cores, RAM, data on disk |{{range .Rows}} {{$.CHCores}}, {{f 0 .CHRAMGiB}} GiB, {{f 2 .DiskPerNodeTiB}} TiB |{{end}}

At 10 M items a day a single ClickHouse node (with a replica) and two small
telemetryd instances have room to spare; the sizes grow with the rate for
CPU and with rate times retention for disk, whichever needs more shards.
Running a cluster is described in [operations](operations.md); how the
figures are measured in [benchmarks](benchmarks.md).
`))

// groupThousands formats v rounded to a whole number with commas between thousands.
func groupThousands(v float64) string {
	s := fmt.Sprintf("%.0f", math.Round(v))
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
