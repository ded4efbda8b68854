package analytics

import (
	"strings"
	"testing"
)

func TestClosestName(t *testing.T) {
	tools := []string{"get_forecast", "get_alerts", "search", "fetch", "weather.list_stations"}
	cases := []struct {
		name, want string
		ok         bool
	}{
		{"get_forcast", "get_forecast", true},            // a dropped letter
		{"get_froecast", "get_forecast", true},           // a transposition
		{"Get_Forecast", "get_forecast", true},           // case only
		{"get_alert", "get_alerts", true},                // a plural
		{"serch", "search", true},                        // 1 of at most 1
		{"list_stations", "weather.list_stations", true}, // namespace dropped
		{"weather_get_alerts", "get_alerts", true},       // namespace added
		{"get_weather", "", false},                       // too far from everything
		{"delete_everything", "", false},
		{"x", "", false},
		{"", "", false},
		{"get_forecast", "", false}, // the name itself is not a suggestion
	}
	for _, c := range cases {
		got, ok := ClosestName(c.name, tools)
		if got != c.want || ok != c.ok {
			t.Errorf("ClosestName(%q) = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestClosestNameTies(t *testing.T) {
	// "cat" is 1 from both; the answer does not depend on order.
	for _, cands := range [][]string{{"bat", "car"}, {"car", "bat"}} {
		if got, _ := ClosestName("cat", cands); got != "bat" {
			t.Errorf("ClosestName(cat, %v) = %q, want bat", cands, got)
		}
	}
	// The nearer one wins over the first one.
	if got, _ := ClosestName("get_forcast", []string{"get_fxrxcast", "get_forecast"}); got != "get_forecast" {
		t.Errorf("got %q", got)
	}
}

func TestClosestThreshold(t *testing.T) {
	for n, want := range map[string]int{"ab": 1, "serch": 1, "search": 2, "get_forcast": 3, strings.Repeat("a", 40): 3} {
		if got := ClosestThreshold(n); got != want {
			t.Errorf("ClosestThreshold(%q) = %d, want %d", n, got, want)
		}
	}
}

func TestClosestNameBounded(t *testing.T) {
	long := strings.Repeat("ab", 2000)
	cands := []string{strings.Repeat("ab", 1999) + "ba", "x"}
	if got, ok := ClosestName(long, cands); !ok || got != cands[0] {
		t.Errorf("long names: %q, %v", got, ok)
	}
}
