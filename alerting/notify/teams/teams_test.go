package teams

import "testing"

func TestCheckURL(t *testing.T) {
	good := "https://prod-01.westus.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=S1g"
	pp := "https://default0123.ab.environment.api.powerplatform.com/powerautomate/automations/direct/workflows/abc/triggers/manual/paths/invoke?api-version=1&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=S1g"
	for raw, ok := range map[string]bool{
		good: true, pp: true,
		"https://contoso.webhook.office.com/webhookb2/x/IncomingWebhook/y/z":                  false,
		"https://logic.azure.com/workflows/abc/triggers/manual/paths/invoke?sig=S":            false,
		"https://a.logic.azure.com.evil.org/workflows/abc/triggers/manual/paths/invoke?sig=S": false,
		"https://a.logic.azure.com:8443/workflows/abc/triggers/manual/paths/invoke?sig=S":     false,
		"https://a.logic.azure.com/workflows/abc/triggers/manual/paths/invoke":                false,
		"https://a.logic.azure.com/workflows/abc/triggers/manual/paths/invoke?sig=S&x=1":      false,
		"https://a.logic.azure.com/other/path?sig=S":                                          false,
		"http://a.logic.azure.com/workflows/abc/triggers/manual/paths/invoke?sig=S":           false,
	} {
		if _, err := checkURL(raw); (err == nil) != ok {
			t.Errorf("%s: %v, want ok=%v", raw, err, ok)
		}
	}
}
