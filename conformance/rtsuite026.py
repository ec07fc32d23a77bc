#!/usr/bin/env python3
"""Run bpftrace v0.26.1's runtime test cases against a bpftrace-compatible binary.

The cases are read from a checkout of bpftrace at tag v0.26.1 (--src, or
$BPFTRACE_SRC): its tests/runtime case files, scripts and expected outputs,
and the C sources of tests/testprogs and tests/testlibs, which are built
here with gcc as bpftrace's CMake files build them. Nothing of bpftrace's is
kept in kinst's repository.

The rules are those of bpftrace 0.26.1's test engine (tests/runtime/engine):

  * a case is a block of lines up to a blank line; '#' lines are ignored; a
    line indented by the length of the directive before it plus one
    continues PROG, EXPECT or EXPECT_REGEX;
  * EXPECT matches one whole line, blanks around it aside; EXPECT_NONE
    must match no line; EXPECT_REGEX and EXPECT_REGEX_NONE are regular
    expressions searched line-wise (re.M); EXPECT_FILE compares the whole
    output, stripped, with a file; EXPECT_JSON compares the JSON (one value,
    or one per line for .ndjson) and runs PROG with -q -f json; for those two
    the output before the notify line is dropped;
  * PROG p runs `bpftrace --verify-llvm-ir -e 'p'`, {{BPFTRACE}} in RUN
    becomes `bpftrace --verify-llvm-ir`, where bpftrace is a symlink to the
    binary under test; the command runs under /bin/sh in the tests folder
    with only test=NAME, the notify variables, PATH and the case's ENV;
  * 10 s are allowed until the tool prints __BPFTRACE_NOTIFY_PROBES_ATTACHED
    on a line of its own; then AFTER starts and TIMEOUT s (5 by default) more
    are allowed; past the deadline the process group gets SIGTERM and the
    case passes iff the expectations hold, whatever the exit status;
  * otherwise the exit status must be RETURN_CODE (0 by default) unless
    WILL_FAIL, which demands a non-zero status;
  * REQUIRES commands must succeed, REQUIRES_FEATURE features must be there
    (from the tool's --info, as the engine asks it), MIN_KERNEL/MAX_KERNEL
    and SKIP_IF_ENV_HAS skip; SETUP and CLEANUP run around the case.

Differences from the engine, all deliberate:

  * host-impossible: there is no bpftrace 0.26.1 on this host to tell what
    the kernel makes impossible, so a case that uses a probe type the host
    cannot attach (kprobes without CONFIG_KPROBES, fentry/fexit refused,
    hardware events without a PMU, watchpoints without breakpoints) is a
    SKIP counted apart, unless --no-host-skip;
  * AFTER commands that signal bpftrace by name signal only this case's
    tool; 10 s after SIGTERM the group gets SIGKILL; REQUIRES commands are
    bounded to 60 s; NEW_PIDNS cases run BEFORE under unshare as the engine
    does, needing util-linux.
"""

import argparse
import fnmatch
import hashlib
import json
import os
import platform
import re
import select
import signal
import subprocess
import sys
import time

CACHE = os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
    "kinst-rtsuite-0.26")
WORK = os.path.join(CACHE, "tests")

ATTACH_TIMEOUT = 10
DEFAULT_TIMEOUT = 5
NOTIFY = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"
AOT_NOTIFY = "__BPFTRACE_NOTIFY_AOT_PORTABILITY_DISABLED"
TOOL_ENV = {}
PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


class Case:
    def __init__(self, suite):
        self.suite = suite
        self.name = self.run = self.prog = self.after = self.setup = self.cleanup = ""
        self.kernel_min = self.kernel_max = ""
        self.expects = []  # (mode, text)
        self.exact = False
        self.timeout = DEFAULT_TIMEOUT
        self.befores, self.requirement, self.arch = [], [], []
        self.env = {}
        self.features, self.neg_features = set(), set()
        self.will_fail = self.new_pidns = False
        self.skip_if_env = None
        self.return_code = 0
        self.localize_ts = -1


MODES = {"EXPECT": "text", "EXPECT_NONE": "text_none", "EXPECT_REGEX": "regex",
         "EXPECT_REGEX_NONE": "regex_none", "EXPECT_FILE": "file", "EXPECT_JSON": "json"}


def parse_block(lines, suite):
    c = Case(suite)
    prev = ""
    for item in lines:
        if prev and item[:len(prev) + 1].isspace():
            cont = item[len(prev) + 1:-1]
            if prev == "PROG":
                c.prog += "\n" + cont
                continue
            if prev in ("EXPECT", "EXPECT_REGEX"):
                mode, text = c.expects[-1]
                c.expects[-1] = (mode, text + "\n" + cont)
                continue
        parts = item.strip().split(maxsplit=1)
        field, line = parts[0], parts[1] if len(parts) > 1 else ""
        prev = field
        if field == "NAME":
            c.name = line
        elif field == "RUN":
            c.run = line
        elif field == "PROG":
            c.prog = line
        elif field in MODES:
            c.expects.append((MODES[field], line))
            c.exact = c.exact or field in ("EXPECT_FILE", "EXPECT_JSON")
        elif field == "TIMEOUT":
            c.timeout = int(line)
        elif field == "BEFORE":
            c.befores.append(line)
        elif field in ("AFTER", "SETUP", "CLEANUP"):
            setattr(c, field.lower(), line)
        elif field == "MIN_KERNEL":
            c.kernel_min = line
        elif field == "MAX_KERNEL":
            c.kernel_max = line
        elif field == "REQUIRES":
            c.requirement.append(line)
        elif field == "ENV":
            for e in line.split():
                k, v = e.split("=", 1)
                c.env[k] = v
        elif field == "ARCH":
            c.arch = [x.strip() for x in line.split("|")]
        elif field == "REQUIRES_FEATURE":
            for f in line.split():
                (c.neg_features if f.startswith("!") else c.features).add(f.lstrip("!"))
        elif field == "WILL_FAIL":
            c.will_fail = True
        elif field == "NEW_PIDNS":
            c.new_pidns = True
        elif field == "SKIP_IF_ENV_HAS":
            k, _, v = line.partition("=")
            c.skip_if_env = (k, v)
        elif field == "RETURN_CODE":
            c.return_code = int(line)
        elif field == "LOCALIZE_TIMESTAMPS":
            # The expected file is a strftime format of this Unix time
            # in local time.
            c.localize_ts = int(line)
        else:
            raise ValueError("%s: unknown directive %s" % (suite, field))
    return c


def read_cases(runtime):
    machine = platform.machine().lower()
    cases = []
    for root, dirs, files in os.walk(runtime):
        for skip in ("engine", "scripts", "outputs"):
            if skip in dirs:
                dirs.remove(skip)
        for fn in sorted(files):
            if fn.startswith(".") or fn.endswith((".txt", ".md", ".py")):
                continue
            with open(os.path.join(root, fn)) as f:
                lines = f.readlines()
            block = []
            for num, line in enumerate(lines, 1):
                if line.startswith("#"):
                    continue
                if line != "\n":
                    block.append(line)
                if (line == "\n" or num == len(lines)) and block:
                    c = parse_block(block, fn)
                    if not c.arch or machine in c.arch:
                        cases.append(c)
                    block = []
    return sorted(cases, key=lambda c: (c.suite, c.name))


def loose(v):
    return [int(x) if x.isdigit() else x for x in re.findall(r"\d+|[a-z]+", v)]


def version_lt(a, b):
    for x, y in zip(loose(a), loose(b)):
        if x != y:
            return x < y if type(x) is type(y) else str(x) < str(y)
    return len(loose(a)) < len(loose(b))


def tool_features(binary):
    """The engine's feature names, from the tool's --info in bpftrace's
    form ("name: yes") or kinst's ("name   yes")."""
    try:
        out = subprocess.run([binary, "--info"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, errors="replace", timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    have = set()
    for line in out.splitlines():
        m = re.match(r"^\s*([\w:.() -]+?):?\s+yes\b", line)
        if m:
            have.add(m.group(1).strip())
    f = {}
    for name, keys in {
        "loop": ["Loop support", "loop"], "probe_read_kernel": ["probe_read_kernel"],
        "btf": ["btf"], "fentry": ["fentry"], "dpath": ["dpath"], "signal": ["send_signal"],
        "iter": ["iter"], "libpath_resolv": ["bcc library path resolution", "uprobe"],
        "dwarf": ["libdw (DWARF support)", "uprobe"], "kprobe_multi": ["kprobe_multi"],
        "kprobe_session": ["kprobe_session"], "uprobe_multi": ["uprobe_multi"],
        "skboutput": ["skboutput", "fentry"], "get_tai_ns": ["get_ktime_ns", "get_tai_ns"],
        "get_func_ip": ["get_func_ip"], "jiffies64": ["jiffies64"],
        "lookup_percpu_elem": ["lookup_percpu_elem", "map_lookup_percpu_elem"],
        "dwunwind": ["dwunwind (DWARF stack unwinding)"], "aot": [],
    }.items():
        f[name] = any(k in have for k in keys)
    return f, have


HOST_PROBE = re.compile(r"(?:^|[\s{}'\",;(])(kprobe|kretprobe|kfunc|kretfunc|fentry|fexit|hardware|"
                        r"watchpoint|k|kr|f|fr|h|w)\s*:(?!:)", re.M | re.I)
NEEDS = {"kprobe": "kprobe", "k": "kprobe", "kretprobe": "kprobe", "kr": "kprobe",
         "kfunc": "fentry", "kretfunc": "fentry", "fentry": "fentry", "fexit": "fentry",
         "f": "fentry", "fr": "fentry", "hardware": "perf_hardware", "h": "perf_hardware",
         "watchpoint": "watchpoint", "w": "watchpoint"}


def host_impossible(c, have, runtime):
    text = c.prog or c.run
    for s in re.findall(r"runtime/scripts/[\w.-]+", c.run):
        try:
            text += "\n" + open(os.path.join(os.path.dirname(runtime), s)).read()
        except OSError:
            pass
    why = set()
    for m in HOST_PROBE.finditer(text):
        need = NEEDS[m.group(1).lower()]
        if need == "watchpoint":
            continue  # breakpoints work here; leave the verdict to the case
        if need not in have:
            why.add("%s probes (this host lacks %s)" % (m.group(1), need))
    return sorted(why)


def build(cmd, out, srcs):
    stamp = out + ".cmd"
    try:
        if (all(os.path.getmtime(s) <= os.path.getmtime(out) for s in srcs)
                and open(stamp).read() == " ".join(cmd)):
            return True
    except OSError:
        pass
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    if r.returncode != 0:
        sys.stderr.write("build failed: %s\n%s\n" % (" ".join(cmd), r.stdout[-2000:]))
        return False
    with open(stamp, "w") as f:
        f.write(" ".join(cmd))
    return True


def prepare(src, cases):
    os.makedirs(WORK, exist_ok=True)
    link, runtime = os.path.join(WORK, "runtime"), os.path.join(src, "tests", "runtime")
    if os.path.islink(link) and os.readlink(link) != runtime:
        os.unlink(link)
    if not os.path.lexists(link):
        os.symlink(runtime, link)
    progdir, libdir = os.path.join(WORK, "testprogs"), os.path.join(WORK, "testlibs")
    os.makedirs(progdir, exist_ok=True)
    os.makedirs(libdir, exist_ok=True)
    sdt = subprocess.run(["gcc", "-E", "-x", "c", "-"], input=b"#include <sys/sdt.h>\n",
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    defs = ["-DHAVE_SYSTEMTAP_SYS_SDT_H"] if sdt else []
    inc = ["-I" + os.path.join(src, "tests", "include")]
    srclib, srcprog = os.path.join(src, "tests", "testlibs"), os.path.join(src, "tests", "testprogs")
    ok = True
    for fn in sorted(os.listdir(srclib)):
        if fn.endswith(".c"):
            s, out = os.path.join(srclib, fn), os.path.join(libdir, "lib" + fn[:-2] + ".so")
            ok = build(["gcc", "-g", "-O0", "-fPIC", "-shared"] + defs + ["-o", out, s], out, [s]) and ok
    text = "\n".join(" ".join([c.run, c.prog, c.after, c.setup] + c.befores + c.requirement) for c in cases)
    for s in set(re.findall(r"runtime/scripts/[\w.-]+", text)):
        try:
            text += open(os.path.join(src, "tests", s)).read()
        except OSError:
            pass
    words = set(re.findall(r"[\w.-]+", text))
    for fn in sorted(os.listdir(srcprog)):
        name, ext = os.path.splitext(fn)
        if ext not in (".c", ".cpp") or not ({name, name + "-pie"} & words):
            continue
        s = os.path.join(srcprog, fn)
        cc = "g++" if ext == ".cpp" else "gcc"
        flags = ["-g", "-O0", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"]
        if name == "uprobe_nofp":
            flags = ["-g", "-O1", "-fomit-frame-pointer", "-fno-optimize-sibling-calls"]
        extra, srcs = [], [s]
        if name == "usdt_lib":
            extra = ["-I" + srclib, "-L" + libdir, "-lusdt_tp", "-Wl,-rpath," + libdir]
            srcs.append(os.path.join(srclib, "usdt_tp.h"))
        for suffix, pie in (("", ["-no-pie"]), ("-pie", ["-fpie", "-pie"])):
            out = os.path.join(progdir, name + suffix)
            ok = build([cc] + flags + defs + inc + ["-o", out, s] + pie + extra, out, srcs) and ok
    return ok


def killpg(pid, sig):
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_pids(pgid, comm):
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                st = open("/proc/%s/stat" % d).read()
            except OSError:
                continue
            name, rest = st[st.index("(") + 1:st.rindex(")")], st[st.rindex(")") + 2:].split()
            if name == comm and int(rest[2]) == pgid:
                pids.append(d)
    return pids


def rewrite_after(after, pgid):
    if "bpftrace" not in after:
        return after
    pids = " ".join(group_pids(pgid, "bpftrace")) or "0"
    after = re.sub(r"pkill\s+(-\S+\s+)?bpftrace", lambda m: "kill %s%s" % (
        (m.group(1) or "").replace("-SIG", "-s ").replace("-s ", "-s ", 1), pids), after)
    return after.replace("$(pidof bpftrace)", pids).replace("`pidof bpftrace`", pids)


def check_expect(mode, text, output, src, localize_ts=-1):
    try:
        if mode == "text":
            return bool(re.search("^\\s*%s\\s*$" % re.escape(text), output, re.M))
        if mode == "text_none":
            return not re.search("^\\s*%s\\s*$" % re.escape(text), output, re.M)
        if mode == "regex":
            return bool(re.search(text, output, re.M))
        if mode == "regex_none":
            return not re.search(text, output, re.M)
        path = os.path.join(WORK, text)
        want = open(path).read()
        if localize_ts >= 0:
            want = time.strftime(want, time.localtime(localize_ts))
        if mode == "file":
            return output.strip() == want.strip()
        got_lines = output.strip().splitlines()
        if path.endswith(".ndjson"):
            want_lines = want.strip().splitlines()
            return len(got_lines) == len(want_lines) and all(
                json.loads(g) == json.loads(w) for g, w in zip(got_lines, want_lines))
        return len(got_lines) == 1 and json.loads(got_lines[0]) == json.loads(want)
    except (OSError, ValueError, re.error):
        return False


def run_case(c, bindir, features, src):
    det = {"cmd": "", "output": "", "rc": None}
    release = os.uname().release
    if c.kernel_min and version_lt(release, c.kernel_min):
        return SKIP, "MIN_KERNEL %s" % c.kernel_min, det
    if c.kernel_max and version_lt(c.kernel_max, release):
        return SKIP, "MAX_KERNEL %s" % c.kernel_max, det
    if c.skip_if_env and os.environ.get(c.skip_if_env[0], "") == c.skip_if_env[1]:
        return SKIP, "SKIP_IF_ENV_HAS", det
    path = "%s:%s" % (bindir, os.environ.get("PATH", "/usr/bin:/bin"))
    for req in c.requirement:
        try:
            rc = subprocess.call(req, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 env={"PATH": path}, cwd=WORK, timeout=60)
        except subprocess.TimeoutExpired:
            rc = -1
        if rc != 0:
            return SKIP, "REQUIRES %s" % req, det
    for f in sorted(c.features):
        if not features.get(f):
            return SKIP, "REQUIRES_FEATURE %s" % f, det
    for f in sorted(c.neg_features):
        if features.get(f):
            return SKIP, "REQUIRES_FEATURE !%s" % f, det
    if c.setup and subprocess.call(c.setup, shell=True, cwd=WORK, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL) != 0:
        return FAIL, "SETUP failed", det
    exe = os.path.join(bindir, "bpftrace")
    befores, p, after = [], None, None
    output, timeout = "", False
    try:
        nsenter = ""
        for i, b in enumerate(c.befores):
            if c.new_pidns and i == 0:
                cmd = ["unshare", "--fork", "--pid", "--mount-proc", "-r", "--kill-child", "--"] + b.split()
            else:
                cmd = (nsenter.split() if nsenter else []) + b.split()
            try:
                befores.append(subprocess.Popen(cmd, cwd=WORK, start_new_session=True, stdin=subprocess.DEVNULL,
                                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            except OSError as e:
                return SKIP, "BEFORE %s: %s (a test program this runner does not build)" % (b, e.strerror), det
            if c.new_pidns and i == 0:
                end = time.monotonic() + c.timeout
                child = None
                while time.monotonic() < end and not child:
                    kids = subprocess.run(["ps", "--ppid", str(befores[0].pid), "--no-headers", "-o", "pid"],
                                          stdout=subprocess.PIPE, text=True).stdout.split()
                    child = kids[0] if kids else None
                    time.sleep(0.1)
                if not child:
                    return FAIL, "NEW_PIDNS: no namespace", det
                nsenter = "nsenter -p -m -t %s" % child
        if c.befores and not c.new_pidns:
            names = [os.path.basename(b.split()[-1])[:15] for b in c.befores]
            end = time.monotonic() + c.timeout
            while any(subprocess.call(["pidof", n], stdout=subprocess.DEVNULL) != 0 for n in names):
                if time.monotonic() > end:
                    return FAIL, "BEFORE never started", det
                time.sleep(0.1)
        if c.run:
            call = c.run.replace("{{BPFTRACE}}", exe + " --verify-llvm-ir")
        else:
            js = "-q -f json " if c.expects and c.expects[0][0] == "json" else ""
            call = "%s %s--verify-llvm-ir -e '%s'" % (exe, js, c.prog.replace("'", "'\\''"))
        if nsenter:
            call = nsenter + " " + call
        if c.befores and "{{BEFORE_PID}}" in call:
            pid = subprocess.run(["pidof", os.path.basename(c.befores[0].split()[-1])],
                                 stdout=subprocess.PIPE, text=True).stdout.split()[0]
            call = call.replace("{{BEFORE_PID}}", pid)
        det["cmd"] = call
        env = {"test": c.name, NOTIFY: "1", AOT_NOTIFY: "1", "PATH": path}
        env.update(TOOL_ENV)
        env.update(c.env)
        p = subprocess.Popen(call, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=env, start_new_session=True, cwd=WORK)
        fd = p.stdout.fileno()
        deadline = time.monotonic() + ATTACH_TIMEOUT
        attached, pending, chunks, eof = False, b"", [], False
        while not (eof and p.poll() is not None):
            now = time.monotonic()
            if now >= deadline:
                raise TimeoutError()
            if eof:
                time.sleep(min(0.05, deadline - now))
                continue
            r, _, _ = select.select([fd], [], [], min(0.1, deadline - now))
            if not r:
                continue
            data = os.read(fd, 65536)
            if not data:
                eof = True
                continue
            chunks.append(data)
            if not attached:
                pending += data
                *lines, pending = pending.split(b"\n")
                if NOTIFY.encode() in lines:
                    attached = True
                    if c.exact:
                        # What follows the line, read with it, is kept.
                        rest = lines[lines.index(NOTIFY.encode()) + 1:]
                        chunks = [b"".join(l + b"\n" for l in rest) + pending]
                    deadline = time.monotonic() + c.timeout
                    if c.after:
                        cmd = rewrite_after(c.after, p.pid)
                        if nsenter:
                            cmd = nsenter + " " + cmd
                        after = subprocess.Popen(cmd, shell=True, cwd=WORK, start_new_session=True,
                                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.DEVNULL)
        p.wait()
        output = decode(chunks)
    except TimeoutError:
        timeout = True
        killpg(p.pid, signal.SIGTERM)
        end = time.monotonic() + 10
        while time.monotonic() < end and not eof:
            r, _, _ = select.select([fd], [], [], 0.1)
            if r:
                data = os.read(fd, 65536)
                if data:
                    chunks.append(data)
                else:
                    eof = True
        if p.poll() is None:
            killpg(p.pid, signal.SIGKILL)
            p.wait()
        output = decode(chunks)
    finally:
        for b in befores:
            killpg(b.pid, signal.SIGKILL)
            b.wait()
        if p is not None:
            killpg(p.pid, signal.SIGKILL)
            if p.poll() is None:
                p.wait()
            p.stdout.close()
        if after is not None:
            killpg(after.pid, signal.SIGKILL)
            after.wait()
        if c.cleanup:
            subprocess.call(c.cleanup, shell=True, cwd=WORK, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    det["output"], det["rc"] = output, p.returncode if p else None
    failed = [(m, t) for m, t in c.expects if not check_expect(m, t, output, src, c.localize_ts)]
    if not timeout:
        if c.will_fail and p.returncode == 0:
            return FAIL, "exit 0 with WILL_FAIL", det
        if not c.will_fail and p.returncode != c.return_code:
            return FAIL, "exit %s, want %s: %s" % (p.returncode, c.return_code, short(first_error(output))), det
    if failed:
        m, t = failed[0]
        return FAIL, "%s%s %s not in: %s" % ("TIMEOUT: " if timeout else "", m, short(t, 60),
                                            short(output.strip())), det
    return PASS, "timed out, matched" if timeout else "", det


def decode(chunks):
    return b"".join(chunks).decode("utf-8", errors="backslashreplace")


def short(s, n=160):
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[:n] + "..."


def first_error(output):
    lines = [l for l in output.split("\n") if l.strip() and l != NOTIFY and not l.startswith("Attach")]
    for l in lines:
        if re.search(r"(?i)error|refused|not supported|unknown|invalid|cannot|expected", l):
            return l
    return lines[0] if lines else "(no output)"


def tool_dir(binary):
    real = os.path.realpath(binary)
    label = "%s-%s" % (os.path.basename(real), hashlib.sha256(real.encode()).hexdigest()[:8])
    d = os.path.join(CACHE, "bin", label)
    os.makedirs(d, exist_ok=True)
    link = os.path.join(d, "bpftrace")
    if os.path.lexists(link) and os.readlink(link) != real:
        os.unlink(link)
    if not os.path.lexists(link):
        os.symlink(real, link)
    return d, label


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("filters", nargs="*", help="fnmatch patterns on suite.name or suite/name")
    ap.add_argument("--src", default=os.environ.get("BPFTRACE_SRC", ""),
                    help="bpftrace v0.26.1 checkout (default $BPFTRACE_SRC)")
    ap.add_argument("--results", help="also write one JSON object per case here")
    ap.add_argument("--no-host-skip", action="store_true")
    ap.add_argument("--tool-env", action="append", default=[], metavar="NAME=VALUE")
    opts = ap.parse_intermixed_args()
    if not opts.src or not os.path.isdir(os.path.join(opts.src, "tests", "runtime")):
        sys.exit("give a bpftrace v0.26.1 checkout with --src or BPFTRACE_SRC")
    src = os.path.abspath(opts.src)
    for kv in opts.tool_env:
        k, _, v = kv.partition("=")
        TOOL_ENV[k] = v
    binary = os.path.abspath(opts.binary)
    bindir, label = tool_dir(binary)
    features, have = tool_features(binary)
    runtime = os.path.join(src, "tests", "runtime")
    sel = [c for c in read_cases(runtime) if not opts.filters or any(
        fnmatch.fnmatchcase(n, pat) for pat in opts.filters
        for n in ("%s.%s" % (c.suite, c.name), "%s/%s" % (c.suite, c.name)))]
    if not prepare(src, sel):
        sys.stderr.write("warning: some test programs failed to build\n")
    logdir = os.path.join(CACHE, "logs", label)
    resf = open(opts.results, "w") if opts.results else None
    print("# tool %s; cases from %s; cwd %s" % (binary, src, WORK), flush=True)
    counts = {PASS: 0, FAIL: 0, SKIP: 0}
    host = 0
    for c in sel:
        t0 = time.monotonic()
        why = [] if opts.no_host_skip else host_impossible(c, have, runtime)
        if why:
            status, reason, det = SKIP, "host-impossible: uses " + "; ".join(why), {}
            host += 1
        else:
            status, reason, det = run_case(c, bindir, features, src)
        counts[status] += 1
        print("%s %s/%s%s" % (status, c.suite, c.name, " -- " + reason if reason else ""), flush=True)
        d = os.path.join(logdir, c.suite)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, re.sub(r"[^\w.-]", "_", c.name) + ".log"), "w") as f:
            f.write("status: %s\nreason: %s\ncmd: %s\nrc: %s\nexpects: %s\n---- output ----\n%s" % (
                status, reason, det.get("cmd"), det.get("rc"), c.expects, det.get("output", "")))
        if resf:
            resf.write(json.dumps({"suite": c.suite, "name": c.name, "status": status, "reason": reason,
                                   "seconds": round(time.monotonic() - t0, 2)}) + "\n")
            resf.flush()
    print("# skipped: %d host-impossible, %d by the cases' own conditions" % (host, counts[SKIP] - host))
    print("%d passed, %d failed, %d skipped" % (counts[PASS], counts[FAIL], counts[SKIP]))
    return 1 if counts[FAIL] else 0


if __name__ == "__main__":
    sys.exit(main())
