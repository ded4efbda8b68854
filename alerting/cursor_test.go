package alerting

import "testing"

// FuzzParseDeliveryCursor feeds arbitrary query strings to the cursor
// parser: it must never panic, and whatever it accepts must be a cursor
// that encodes back to a cursor parsing to the same position.
func FuzzParseDeliveryCursor(f *testing.F) {
	f.Add("")
	f.Add("garbage")
	f.Add(DeliveryCursor{ID: "dlv_abc"}.Encode())
	f.Add("eyJ0IjotMSwiaSI6ImEifQ")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseDeliveryCursor(s)
		if err != nil || c == nil {
			return
		}
		if !PlausibleID(c.ID) {
			t.Fatalf("accepted id %q", c.ID)
		}
		again, err := ParseDeliveryCursor(c.Encode())
		if err != nil || !again.CreatedAt.Equal(c.CreatedAt) || again.ID != c.ID {
			t.Fatalf("round trip of %+v: %+v, %v", c, again, err)
		}
	})
}
