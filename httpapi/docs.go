package httpapi

import (
	"embed"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

//go:embed docsui
var docsUI embed.FS

// docsPage renders the OpenAPI document with Swagger UI, whose assets are
// embedded in the binary: the reference works offline and behind firewalls.
const docsPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>MCP Telemetry API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<style>body{margin:0} .topbar{display:none}</style></head>
<body><div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true,
  defaultModelsExpandDepth: 0, docExpansion: "list", tryItOutEnabled: false, validatorUrl: null});
</script></body></html>`

func (s *Server) registerDocs() {
	s.engine.GET("/docs", func(c *gin.Context) {
		if wantsHTML(c.GetHeader("Accept")) {
			c.Header("Content-Type", "text/html; charset=utf-8")
			c.String(http.StatusOK, docsPage)
			return
		}
		b, err := json.Marshal(s.api.OpenAPI())
		if err != nil {
			writeProblem(c, ProblemFromError(c.Request.Context(), err))
			return
		}
		c.Data(http.StatusOK, "application/json", b)
	})
	s.engine.GET("/docs/assets/:file", func(c *gin.Context) {
		name := c.Param("file")
		b, err := docsUI.ReadFile("docsui/" + name)
		if err != nil || strings.Contains(name, "/") {
			noRoute(c)
			return
		}
		ct := "application/octet-stream"
		switch {
		case strings.HasSuffix(name, ".js"):
			ct = "text/javascript; charset=utf-8"
		case strings.HasSuffix(name, ".css"):
			ct = "text/css; charset=utf-8"
		}
		c.Header("Cache-Control", "public, max-age=86400")
		c.Data(http.StatusOK, ct, b)
	})
}

// wantsHTML reports whether a client prefers HTML: browsers list text/html
// in Accept; API clients send application/json, */* or nothing.
func wantsHTML(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt := strings.TrimSpace(strings.SplitN(part, ";", 2)[0])
		switch mt {
		case "text/html", "application/xhtml+xml":
			return true
		case "application/json", "application/openapi+json":
			return false
		}
	}
	return false
}
