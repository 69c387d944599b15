package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBrowser drives a page in headless Chromium: a click on a button
// runs its handler (twice: 2), text typed into a box fires its input
// events, and a script's exception is an error.
func TestBrowser(t *testing.T) {
	b, ok := OpenBrowser(t, "chromium-headless-shell", 800, 600)
	if !ok {
		t.Skip("chromium-headless-shell is not installed")
	}
	page := filepath.Join(t.TempDir(), "page.html")
	html := `<!DOCTYPE html><html><body style="height:3000px">
<input id="box"><p id="typed"></p>
<button id="b" style="margin-top:2000px">click</button><p id="n">0</p>
<script>
document.getElementById("b").addEventListener("click", function () { var n = document.getElementById("n"); n.textContent = Number(n.textContent) + 1; });
document.getElementById("box").addEventListener("input", function (e) { document.getElementById("typed").textContent = e.target.value; });
</script></body></html>`
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Open("file://" + page)
	b.Click("#b")
	b.Click("#b")
	var n, typed string
	b.Eval(`document.getElementById("n").textContent`, &n)
	if n != "2" {
		t.Errorf("after two clicks the count is %q, want 2", n)
	}
	b.Type("#box", "main.f")
	b.Eval(`document.getElementById("typed").textContent`, &typed)
	if typed != "main.f" {
		t.Errorf("typed %q, want main.f", typed)
	}
	if err := b.eval(`(function () { throw new Error("boom"); })()`, nil); err == nil {
		t.Error("an exception is no error")
	}
}
