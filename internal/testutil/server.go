package testutil

import (
	"bufio"
	"io"
	"os/exec"
	"testing"
	"time"
)

// Server is a running fixture that a test talks to through its standard
// streams (epolltick.c, the attach fixtures): it says "ready", answers
// each command with a line, and ends at "q".
type Server struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	// exited receives how it ended.
	exited chan error
	// limit is how long an answer may take.
	limit time.Duration
}

// Serve starts cmd and waits for its "ready"; an answer may take limit.
// When the test ends the server is told to quit, and reaped: killed if
// it has not quit after ten seconds, an error if it ended otherwise than
// well.
func Serve(t *testing.T, cmd *exec.Cmd, limit time.Duration) *Server {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Server{cmd: cmd, in: in, lines: make(chan string, 16), exited: make(chan error, 1), limit: limit}
	read := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		close(read)
	}()
	go func() {
		<-read
		s.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		io.WriteString(in, "q\n")
		select {
		case err := <-s.exited:
			if err != nil && !t.Failed() {
				t.Errorf("the server ended with %v", err)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-s.exited
			t.Errorf("the server did not quit")
		}
	})
	s.Expect(t, "ready")
	return s
}

// PID is the server's process ID.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Alive fails the test, saying how the server ended and what the tool
// said, when it is gone.
func (s *Server) Alive(t *testing.T, said string) {
	t.Helper()
	select {
	case err := <-s.exited:
		s.exited <- err
		t.Fatalf("the server ended: %v\nthe tool said:\n%s", err, said)
	default:
	}
}

// Expect reads the server's next line, which must be want.
func (s *Server) Expect(t *testing.T, want string) {
	t.Helper()
	select {
	case got, ok := <-s.lines:
		if !ok || got != want {
			t.Fatalf("server said %q (open %v), want %q", got, ok, want)
		}
	case <-time.After(s.limit):
		t.Fatalf("server: no %q after %v", want, s.limit)
	}
}

// Ask sends a command and expects its answer.
func (s *Server) Ask(t *testing.T, cmd, want string) {
	t.Helper()
	if got := s.Say(t, cmd); got != want {
		t.Fatalf("server said %q to %q, want %q", got, cmd, want)
	}
}

// Say sends a command and returns the server's answer.
func (s *Server) Say(t *testing.T, cmd string) string {
	t.Helper()
	if _, err := io.WriteString(s.in, cmd+"\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case said, ok := <-s.lines:
		if !ok {
			t.Fatalf("server: ended before it answered %q", cmd)
		}
		return said
	case <-time.After(s.limit):
		t.Fatalf("server: no answer to %q after %v", cmd, s.limit)
	}
	return ""
}

// Await sends a command until its answer is want (a signal is handled
// by whichever thread the kernel chooses, a moment after it is sent).
func (s *Server) Await(t *testing.T, cmd, want string) {
	t.Helper()
	deadline := time.Now().Add(s.limit)
	for {
		if _, err := io.WriteString(s.in, cmd+"\n"); err != nil {
			t.Fatal(err)
		}
		var got string
		select {
		case got = <-s.lines:
		case <-time.After(s.limit):
		}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server said %q, want %q", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
