package testutil

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Browser is headless Chromium driven over the DevTools protocol on a
// pipe (--remote-debugging-pipe: Chromium reads commands on its file
// descriptor 3 and writes replies and events on 4, each message JSON
// ended by a NUL byte), for tests that click in a page and read its
// DOM. No WebSocket, no port: the protocol's own transport for a parent
// process.
type Browser struct {
	t       testing.TB
	cmd     *exec.Cmd
	in      *os.File // commands, to Chromium's fd 3
	out     *bufio.Reader
	next    int
	session string // the page's (Target.attachToTarget, flattened)
}

// OpenBrowser starts headless Chromium (the program named name) with a
// window of width × height CSS pixels and a blank page, or reports false
// when it is not installed. The browser is closed at the test's end.
func OpenBrowser(t testing.TB, name string, width, height int) (*Browser, bool) {
	t.Helper()
	if !HaveTool(name) {
		return nil, false
	}
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--remote-debugging-pipe", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		fmt.Sprintf("--window-size=%d,%d", width, height), "--user-data-dir=" + t.TempDir()}
	if os.Geteuid() == 0 {
		args = append([]string{"--no-sandbox"}, args...) // (Chromium's sandbox refuses root)
	}
	cmd := exec.Command(name, args...)
	cmd.ExtraFiles = []*os.File{cmdR, outW} // (fds 3 and 4)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	cmdR.Close()
	outW.Close()
	b := &Browser{t: t, cmd: cmd, in: cmdW, out: bufio.NewReader(outR)}
	t.Cleanup(func() {
		b.in.Close() // (Chromium ends when its pipe closes)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		outR.Close()
	})
	var target struct{ TargetID string }
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	b.call(b.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	return b, true
}

// call sends a command (to the page's session, or to the browser for
// "") and reads messages up to its reply, whose result it decodes into
// result (nil: none); the events on the way are dropped. A protocol
// error fails the test.
func (b *Browser) call(session, method string, params any, result any) {
	b.t.Helper()
	b.next++
	id := b.next
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.in.Write(append(data, 0)); err != nil {
		b.t.Fatalf("browser: %s: %v", method, err)
	}
	for {
		line, err := b.out.ReadBytes(0)
		if err != nil {
			b.t.Fatalf("browser: %s: reading the reply: %v", method, err)
		}
		var reply struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line[:len(line)-1], &reply); err != nil {
			b.t.Fatalf("browser: %s: %v", method, err)
		}
		if reply.ID != id {
			continue // (an event, or another command's reply)
		}
		if reply.Error != nil {
			b.t.Fatalf("browser: %s: %s", method, reply.Error.Message)
		}
		if result != nil {
			if err := json.Unmarshal(reply.Result, result); err != nil {
				b.t.Fatalf("browser: %s: %v", method, err)
			}
		}
		return
	}
}

// Open loads url in the page and waits until it has loaded (its
// document complete) and its scripts have run.
func (b *Browser) Open(url string) {
	b.t.Helper()
	b.call(b.session, "Page.navigate", map[string]any{"url": url}, nil)
	deadline := time.Now().Add(time.Minute)
	for {
		var state string
		if b.eval(`document.readyState + "|" + location.href`, &state); strings.HasPrefix(state, "complete|") && !strings.HasSuffix(state, "|about:blank") {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("browser: %s did not load", url)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Eval evaluates the script expression expr in the page and decodes its
// value (JSON) into v; an exception fails the test.
func (b *Browser) Eval(expr string, v any) {
	b.t.Helper()
	if err := b.eval(expr, v); err != nil {
		b.t.Fatalf("browser: %s: %v", expr, err)
	}
}

func (b *Browser) eval(expr string, v any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception *struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	b.call(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r)
	if e := r.ExceptionDetails; e != nil {
		if e.Exception != nil {
			return errors.New(e.Exception.Description)
		}
		return errors.New(e.Text)
	}
	if v == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, v)
}

// Click clicks the middle of the first element matching the CSS
// selector, as a mouse does (pressed and released there: the page
// receives the events a user's click makes), after scrolling it into
// view.
func (b *Browser) Click(selector string) {
	b.t.Helper()
	var at struct{ X, Y float64 }
	b.Eval(fmt.Sprintf(`(function () {
		var e = document.querySelector(%q);
		if (!e) { throw new Error("no element matches %s"); }
		e.scrollIntoView({block: "center", inline: "center"});
		var r = e.getBoundingClientRect();
		return {X: r.left + r.width / 2, Y: r.top + r.height / 2};
	})()`, selector, strings.ReplaceAll(selector, `"`, `'`)), &at)
	b.call(b.session, "Input.dispatchMouseEvent", map[string]any{"type": "mouseMoved", "x": at.X, "y": at.Y}, nil)
	for _, kind := range []string{"mousePressed", "mouseReleased"} {
		b.call(b.session, "Input.dispatchMouseEvent", map[string]any{"type": kind, "x": at.X, "y": at.Y, "button": "left", "clickCount": 1}, nil)
	}
}

// Type types text into the element matching selector, focused first,
// as a keyboard does (Input.insertText: the page receives input events).
func (b *Browser) Type(selector, text string) {
	b.t.Helper()
	b.Eval(fmt.Sprintf(`(function () { var e = document.querySelector(%q); if (!e) { throw new Error("no element"); } e.focus(); e.select && e.select(); })()`, selector), nil)
	b.call(b.session, "Input.insertText", map[string]any{"text": text}, nil)
}

// Wait waits until the script expression cond is true in the page (the
// events a click queued have run: a fragment's hashchange comes after
// the click), failing the test after ten seconds.
func (b *Browser) Wait(cond string) {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var ok bool
		if b.eval("Boolean("+cond+")", &ok); ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("browser: waited 10 s for %s", cond)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
