package vm

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// A cpioWriter writes the "newc" cpio format that the kernel unpacks as an
// initramfs. The kernel creates no missing parent folders, so the writer adds
// each parent before the first entry below it.
type cpioWriter struct {
	w    *bufio.Writer
	ino  int
	dirs map[string]bool
	err  error
}

func newCPIOWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: bufio.NewWriter(w), dirs: map[string]bool{"/": true}}
}

// header writes one entry's header and name; name is absolute in the guest.
func (c *cpioWriter) header(name string, mode uint32, size int64, rdevMajor, rdevMinor uint32) {
	if c.err != nil {
		return
	}
	if size > 0xffffffff {
		c.err = fmt.Errorf("initramfs entry %s: %d bytes is over the cpio limit of 4 GiB", name, size)
		return
	}
	c.ino++
	rel := strings.TrimPrefix(name, "/")
	// Fields: magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor,
	// devminor, rdevmajor, rdevminor, namesize, check.
	_, c.err = fmt.Fprintf(c.w, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%s\x00",
		c.ino, mode, 0, 0, 1, 0, size, 0, 0, rdevMajor, rdevMinor, len(rel)+1, 0, rel)
	c.pad(110 + len(rel) + 1)
}

// pad writes zeros up to the next multiple of four after n bytes.
func (c *cpioWriter) pad(n int) {
	if c.err == nil && n%4 != 0 {
		_, c.err = c.w.Write(make([]byte, 4-n%4))
	}
}

func (c *cpioWriter) parents(name string) {
	dir := path.Dir(name)
	if c.dirs[dir] {
		return
	}
	c.parents(dir)
	c.header(dir, 0o040755, 0, 0, 0)
	c.dirs[dir] = true
}

// Dir adds a folder with the given permission bits.
func (c *cpioWriter) Dir(name string, perm fs.FileMode) {
	name = path.Clean(name)
	if c.dirs[name] {
		return
	}
	c.parents(name)
	mode := uint32(perm.Perm()) | 0o040000
	if perm&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	c.header(name, mode, 0, 0, 0)
	c.dirs[name] = true
}

// Bytes adds a regular file holding data.
func (c *cpioWriter) Bytes(name string, perm fs.FileMode, data []byte) {
	c.parents(name)
	c.header(name, uint32(perm.Perm())|0o100000, int64(len(data)), 0, 0)
	if c.err == nil {
		_, c.err = c.w.Write(data)
	}
	c.pad(len(data))
}

// File adds a copy of the host file src, keeping its permission bits.
func (c *cpioWriter) File(name, src string) {
	if c.err != nil {
		return
	}
	f, err := os.Open(src)
	if err != nil {
		c.err = err
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		c.err = err
		return
	}
	if !st.Mode().IsRegular() {
		c.err = fmt.Errorf("%s is not a regular file", src)
		return
	}
	c.parents(name)
	c.header(name, uint32(st.Mode().Perm())|0o100000, st.Size(), 0, 0)
	if c.err != nil {
		return
	}
	n, err := io.Copy(c.w, f)
	if err == nil && n != st.Size() {
		err = fmt.Errorf("%s changed size while being packed", src)
	}
	c.err = err
	c.pad(int(n))
}

// Symlink adds a symbolic link to target.
func (c *cpioWriter) Symlink(name, target string) {
	c.parents(name)
	c.header(name, 0o120777, int64(len(target)), 0, 0)
	if c.err == nil {
		_, c.err = io.WriteString(c.w, target)
	}
	c.pad(len(target))
}

// CharDev adds a character device node.
func (c *cpioWriter) CharDev(name string, major, minor uint32) {
	c.parents(name)
	c.header(name, 0o020600, 0, major, minor)
}

// Tree adds the host folder src and everything below it at name, keeping
// regular files, folders and symbolic links and refusing anything else.
func (c *cpioWriter) Tree(name, src string) {
	if c.err != nil {
		return
	}
	c.err = fs.WalkDir(os.DirFS(src), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		guest, host := path.Join(name, rel), src+"/"+rel
		switch t := d.Type(); {
		case t.IsDir():
			info, err := d.Info()
			if err != nil {
				return err
			}
			c.Dir(guest, info.Mode())
		case t.IsRegular():
			c.File(guest, host)
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(host)
			if err != nil {
				return err
			}
			c.Symlink(guest, target)
		default:
			return fmt.Errorf("%s: cannot pack a file of type %s", host, t)
		}
		return c.err
	})
}

// Close writes the trailer and flushes; it returns the first error met.
func (c *cpioWriter) Close() error {
	c.header("TRAILER!!!", 0, 0, 0, 0)
	if c.err == nil {
		c.err = c.w.Flush()
	}
	return c.err
}
