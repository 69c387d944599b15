package datafile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// How the tools write files. Every file is made as a new file in the
// directory of its name and renamed over that name: a symbolic link
// planted there is replaced, never followed, and a file that is there is
// never written into, whoever may write it otherwise. The data files are
// renamed once written whole ([WriteFileAtomic]); the files written as a
// run goes (PROFILE's execution trace and its /E file) at once, before
// anything is written in them ([CreateLive]). A new file has the mode
// open(2) gives it (0666 less the umask, or the directory's default
// ACL), no wider than the file it replaces. A file the user names for
// output (plist -o, profile /E) that is not a regular file (a device, a
// FIFO, a terminal, /dev/stdout) is written in place, as a shell's > does
// ([WriteOutput], [OpenLog]).

// NotRegularError is the error of a data file whose name is taken by what
// is not a regular file, which is not replaced: a directory, a device, a
// FIFO, a socket, or an open file named through /proc (/dev/stdout,
// /dev/fd/N, /proc/self/fd/N).
type NotRegularError struct {
	// Mode is the type of what is there, the end of its symbolic links;
	// 0 for an open file named through /proc.
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	var what string
	switch m := e.Mode; {
	case m == 0:
		what = "an open file named through /proc"
	case m.IsDir():
		return "is a directory" // as the system says it
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	case m&fs.ModeNamedPipe != 0:
		what = "a FIFO"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	default:
		return "is not a regular file"
	}
	return "is " + what + ", not a regular file"
}

// ErrBusy is the error of [CreateLive] with its lock when another process
// holds the lock of the file at the name.
var ErrBusy = errors.New("locked by another process")

// ErrAppendLink is the error of [OpenLog] asked to append to a symbolic
// link to a regular file: a file is appended to through its own name
// only, so that a link planted there cannot make a tool write into any
// file its user may write.
var ErrAppendLink = errors.New("is a symbolic link: a file is appended to through its own name only")

// Replaceable reports why a data file could not be written at path, where
// something is that is not replaced ([WriteFileAtomic]): a
// [*NotRegularError]. It does not check the directory.
func Replaceable(path string) error {
	_, err := replaced(path)
	return err
}

// oldFile is the file a new one replaces.
type oldFile struct {
	exists bool
	perm   fs.FileMode // its permission bits
}

// replaced returns the regular file at path that a new file will replace,
// or an error when what is at path is not to be replaced. A symbolic link
// is replaced when it leads to a regular file or nowhere; the new file
// does not take the mode of the file it led to, which stays as it was.
func replaced(path string) (oldFile, error) {
	if _, ok := procLink(path); ok {
		return oldFile{}, &NotRegularError{}
	}
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		// Nothing there, or a directory that cannot be searched:
		// making the temporary file says why.
		return oldFile{}, nil
	case fi.Mode().IsRegular():
		return oldFile{exists: true, perm: fi.Mode().Perm()}, nil
	case fi.Mode()&fs.ModeSymlink != 0:
		if to, err := os.Stat(path); err == nil && !to.Mode().IsRegular() {
			return oldFile{}, &NotRegularError{Mode: to.Mode().Type()}
		}
		return oldFile{}, nil
	}
	return oldFile{}, &NotRegularError{Mode: fi.Mode().Type()}
}

// createTemp makes the temporary file that will replace path, in its
// directory: with mode perm, which the kernel filters by the umask, then
// narrowed to the mode of the file it replaces. The error of a file that
// cannot be made is a [*DirError]: the temporary file's name would mean
// nothing to the user.
func createTemp(path string, perm os.FileMode, old oldFile) (*os.File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	prefix, suffix, _ := strings.Cut(tempPattern(base), "*")
	var f *os.File
	var err error
	for range 10000 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10)+suffix)
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil, NewDirError(dir, err)
	}
	if old.exists {
		fi, err := f.Stat()
		if err == nil && fi.Mode().Perm()&^old.perm != 0 {
			err = f.Chmod(fi.Mode().Perm() & old.perm)
		}
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, err
		}
	}
	return f, nil
}

// CreateLive returns a new file that has taken path's name, for a file
// written as a run goes and read whatever becomes of its writer
// (PROFILE's execution trace, its /E file): made in path's directory as
// [WriteFileAtomic] makes its temporary file, and renamed over path at
// once, before anything is written in it, so that what is written is at
// path even when the writer dies. What is at path is replaced as
// [WriteFileAtomic] replaces it, never written into.
//
// With lock, the new file is locked (flock(2), exclusive) before it takes
// the name, and takes it only when no other process holds the lock of the
// file at path: else the error is [ErrBusy], and path is left as it was.
// The check and the rename are made under the directory's lock
// ([LockDir]), so that of two writers at once the first keeps the name.
func CreateLive(path string, perm os.FileMode, lock bool) (*os.File, error) {
	old, err := replaced(path)
	if err != nil {
		return nil, err
	}
	if lock {
		unlock, err := LockDir(path)
		if err != nil {
			return nil, err
		}
		defer unlock()
		if heldByOther(path) {
			return nil, ErrBusy
		}
	}
	f, err := createTemp(path, perm, old)
	if err != nil {
		return nil, err
	}
	if lock {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	syncDir(filepath.Dir(path)) // (the name is taken; it lasts with the first sync of the file)
	return f, nil
}

// heldByOther reports whether another process holds the lock of the
// regular file at path.
func heldByOther(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	return errors.Is(syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB), syscall.EWOULDBLOCK)
}

// WriteOutput writes what write writes to path, a file the user names for
// a tool's output (plist -o). A regular file, or a new one, is replaced
// whole or not at all ([WriteFileAtomic]). What is not a regular file is
// written in place, as a shell's > writes it, and never replaced: a
// device such as /dev/null, a FIFO, a terminal, a socket, and an open
// file named through /proc (/dev/stdout, /dev/fd/N, /proc/self/fd/N),
// whatever it is open on. For the tool's own descriptor (/dev/stdout) the
// write goes through that descriptor, at its offset and in its append
// mode; anything else is opened for writing, never created.
func WriteOutput(path string, perm os.FileMode, write func(io.Writer) error) error {
	s := outputSink(path)
	if !s.inPlace {
		return WriteFileAtomic(path, perm, write)
	}
	f, err := s.open(path, 0)
	if errors.Is(err, errNowRegular) {
		return WriteFileAtomic(path, perm, write)
	}
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// OpenLog opens the file at path for a log written as a run goes
// (PROFILE's /E file), appended to with appendTo (/A). What is not a
// regular file is written in place, as [WriteOutput] writes it. A
// regular file is appended to through its own name only, never through a
// symbolic link ([ErrAppendLink]); where there is none, or without
// appendTo, the log is a new file ([CreateLive]).
func OpenLog(path string, appendTo bool, perm os.FileMode) (*os.File, error) {
	if s := outputSink(path); s.inPlace {
		flag := 0
		if appendTo {
			flag = os.O_APPEND
		}
		f, err := s.open(path, flag)
		if !errors.Is(err, errNowRegular) {
			return f, err
		}
	}
	if appendTo {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		switch {
		case errors.Is(err, syscall.ELOOP):
			return nil, ErrAppendLink
		case err == nil:
			if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
				f.Close()
				if err == nil {
					err = &NotRegularError{Mode: fi.Mode().Type()}
				}
				return nil, err
			}
			return f, nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	return CreateLive(path, perm, false)
}

// sink is where an output named by a path goes.
type sink struct {
	// inPlace is set for what is not a regular file: it is written into.
	inPlace bool
	// proc is set for an open file named through /proc; fd is the
	// process's own descriptor it names, or -1.
	proc bool
	fd   int
}

// outputSink tells how the output at path is written.
func outputSink(path string) sink {
	if fd, ok := procLink(path); ok {
		return sink{inPlace: true, proc: true, fd: fd}
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		return sink{inPlace: true, fd: -1}
	}
	return sink{fd: -1}
}

// errNowRegular is the error of sink.open when what it opened is a
// regular file, which is replaced rather than written into.
var errNowRegular = errors.New("a regular file now")

// open opens the sink at path for writing, with flag (os.O_APPEND or 0),
// never creating a file: a new descriptor of the process's own that a
// /proc link names, or the file. A regular file named through another
// process's descriptor is truncated, as a shell's > truncates it; one
// found where the name was not a regular file an instant before gives
// errNowRegular.
func (s sink) open(path string, flag int) (*os.File, error) {
	if s.fd >= 0 {
		fd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(s.fd), syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			return nil, &fs.PathError{Op: "open", Path: path, Err: errno}
		}
		return os.NewFile(fd, path), nil
	}
	if s.proc && flag == 0 {
		flag = os.O_TRUNC // (not applied to what is not a regular file)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|flag, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && !s.proc {
		f.Close()
		return nil, errNowRegular
	}
	return f, nil
}

// procLink returns whether path is, or leads through its symbolic links
// to, a link of /proc, which names an open file rather than a place in a
// directory (/dev/stdout leads to /proc/self/fd/1), and the process's own
// descriptor it names, or -1.
func procLink(path string) (fd int, ok bool) {
	p := path
	for range 40 { // (the kernel's limit of links followed)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return -1, false
		}
		dir := filepath.Dir(p)
		if onProc(dir) {
			return ownFD(dir, filepath.Base(p)), true
		}
		to, err := os.Readlink(p)
		if err != nil {
			return -1, false
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(dir, to)
		}
		p = to
	}
	return -1, false
}

// procSuperMagic is the f_type of the proc file system (statfs(2)).
const procSuperMagic = 0x9fa0

// onProc reports whether dir is on the proc file system.
func onProc(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Type == procSuperMagic
}

// ownFD returns the descriptor that the link name in the /proc directory
// dir names when dir is the process's own descriptor table
// (/proc/self/fd, /proc/thread-self/fd), else -1.
func ownFD(dir, name string) int {
	n, err := strconv.Atoi(name)
	if err != nil || n < 0 {
		return -1
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return -1
	}
	own := "/proc/" + strconv.Itoa(os.Getpid())
	if real == own+"/fd" {
		return n
	}
	if task, ok := strings.CutPrefix(real, own+"/task/"); ok {
		if tid, ok := strings.CutSuffix(task, "/fd"); ok && !strings.Contains(tid, "/") {
			return n
		}
	}
	return -1
}
