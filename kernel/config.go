package kernel

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// ErrNoConfig is returned when neither /proc/config.gz nor
// /boot/config-$(uname -r) can be read.
var ErrNoConfig = errors.New("kernel build configuration is not available")

// Config is a kernel build configuration: option name (with its CONFIG_
// prefix) to value. Options the file records as "is not set" have the
// value "n", so that a known-off option differs from an unknown one.
type Config struct {
	Source  string // the file it was read from
	options map[string]string
}

// Value returns an option's value ("y", "m", "n", a number or a quoted
// string) and whether the configuration mentions the option at all.
func (c *Config) Value(option string) (string, bool) {
	v, ok := c.options[option]
	return v, ok
}

// Enabled reports whether an option is built in or a module.
func (c *Config) Enabled(option string) bool {
	v := c.options[option]
	return v == "y" || v == "m"
}

// Disabled reports whether the configuration says the option is off,
// either explicitly ("is not set") or by leaving out an option that exists
// only in kernels built with it.
func (c *Config) Disabled(option string) bool {
	v, ok := c.options[option]
	return !ok || v == "n"
}

var configCache struct {
	once sync.Once
	cfg  *Config
	err  error
}

// LoadConfig reads the running kernel's build configuration from
// /proc/config.gz, or else /boot/config-$(uname -r), once per process.
func LoadConfig() (*Config, error) {
	configCache.once.Do(func() {
		configCache.cfg, configCache.err = readConfig()
	})
	return configCache.cfg, configCache.err
}

func readConfig() (*Config, error) {
	var errs []error
	if f, err := os.Open("/proc/config.gz"); err == nil {
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err == nil {
			var c *Config
			if c, err = ParseConfig("/proc/config.gz", zr); err == nil {
				return c, nil
			}
		}
		errs = append(errs, fmt.Errorf("/proc/config.gz: %w", err))
	}
	release, err := Release()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoConfig, err)
	}
	path := "/boot/config-" + release
	data, err := os.ReadFile(path)
	if err != nil {
		errs = append(errs, err)
		return nil, fmt.Errorf("%w: %w", ErrNoConfig, errors.Join(errs...))
	}
	return ParseConfig(path, bytes.NewReader(data))
}

// ParseConfig parses a kernel .config file; source names it in messages.
func ParseConfig(source string, r io.Reader) (*Config, error) {
	c := &Config{Source: source, options: map[string]string{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if opt, ok := strings.CutPrefix(line, "# "); ok {
			if name, ok := strings.CutSuffix(opt, " is not set"); ok && strings.HasPrefix(name, "CONFIG_") {
				c.options[name] = "n"
			}
			continue
		}
		if name, val, ok := strings.Cut(line, "="); ok && strings.HasPrefix(name, "CONFIG_") {
			c.options[name] = val
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", source, err)
	}
	return c, nil
}
