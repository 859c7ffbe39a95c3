"""Output directories written atomically: everything goes into a temporary sibling directory that is
renamed into place at the end, so an interrupted or failed command never leaves a half-written
result (``qoelab run``, ``qoelab video prepare``, ``qoelab reproduce``).

Temporary directories are named ``.qoelab-tmp-<pid>n<pidns>-...`` next to the output (``pidns``: the
inode of the writer's PID namespace); ones left behind by a process that no longer exists (killed
with SIGKILL, power loss) are removed by the next command that writes into the same parent
directory. A writer in another PID namespace (a command run under ``qoelab link``, whose children
have their own) cannot tell whether the pid is alive, so its files are left alone unless they are
older than a day. Results get the normal permissions of the user's umask
(0755 directories, 0644 files with the usual umask 022), not mkdtemp's 0700.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

from qoelab.errors import InputError

TMP_PREFIX = ".qoelab-tmp-"
FOREIGN_STALE_S = 86400      # a temporary file of another PID namespace is stale after a day


def _pidns() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def tmp_prefix() -> str:
    """The prefix of this process's temporary names: ``.qoelab-tmp-<pid>n<pidns>-``."""
    return f"{TMP_PREFIX}{os.getpid()}n{_pidns()}-"


def is_stale(path: str, name: str) -> bool:
    """``name`` (in ``path``) is a temporary file of a writer that no longer exists: its pid is not
    alive in our PID namespace; a name from another PID namespace only when older than a day."""
    import time
    head = name[len(TMP_PREFIX):].split("-", 1)[0]
    pid, _, ns = head.partition("n")
    if not pid.isdigit():
        return False
    if ns and ns != _pidns():
        try:
            return time.time() - os.lstat(path).st_mtime > FOREIGN_STALE_S
        except OSError:
            return False
    return int(pid) != os.getpid() and not _pid_alive(int(pid))


def check(out_dir: str, force: bool = False, replaceable=None, hint: str = "use --force to replace it") -> str:
    """The absolute output path, after refusing what must not be replaced: a non-directory, or a
    non-empty directory unless ``force`` or ``replaceable(path)`` is true (the refusal ends with
    ``hint``). Call it before the work starts, so that a refusal costs nothing. Never replaced,
    even with ``force``: "" (an unset shell variable would otherwise name the current directory)
    and a directory (empty or not) that is or holds the current directory."""
    out_dir = given(out_dir)
    creatable(out_dir)
    if os.path.lexists(out_dir):
        if not os.path.isdir(out_dir) or os.path.islink(out_dir):
            raise InputError(out_dir, None, message="output path exists and is not a directory")
        if os.listdir(out_dir):
            if not force and not (replaceable and replaceable(out_dir)):
                raise InputError(out_dir, None, message=f"output directory exists and is not empty ({hint})")
        # empty too: the result replaces the directory (a rename), and `--out .` in an empty current
        # directory deleted it from under the caller's shell
        refuse_if_holds_cwd(out_dir)
    return out_dir


def creatable(path: str) -> None:
    """Refuse, before the work, an output path that cannot be created: under something that is not a
    directory (``--out afile/sub``), or where its nearest existing ancestor takes no new directory."""
    _name_lengths(path)
    up = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(up):
        up = os.path.dirname(up)
    if not os.path.isdir(up):
        raise InputError(path, None, message=f"cannot be created: {up} is not a directory")
    try:   # where a directory cannot be made (/proc, a read-only mount, no permission): say so now
        os.rmdir(tempfile.mkdtemp(prefix=tmp_prefix(), dir=up))
    except OSError as e:
        raise _cannot_create(path, e) from None


def _name_lengths(path: str) -> None:
    """Refuse a path the file system cannot name (a component over NAME_MAX bytes, the whole over
    PATH_MAX): it failed only when the result was written, after the work."""
    full = os.path.abspath(path)
    if len(os.fsencode(full)) >= 4096:
        raise InputError(_short(path), None, message="cannot be created: the path is longer than 4,095 bytes")
    for part in full.split(os.sep):
        if len(os.fsencode(part)) > 255:
            raise InputError(_short(path), None, message=f"cannot be created: a name of {len(os.fsencode(part)):,} "
                                                         "bytes in the path (at most 255)")


def _short(path: str) -> str:
    return path if len(path) <= 200 else f"{path[:200]}... ({len(path)} characters)"


def _cannot_create(path: str, e: OSError) -> InputError:
    return InputError(path, None, message=f"cannot be created: {e.strerror or e}")


def given(out_dir: str) -> str:
    """The absolute path of an --out value; "" (an unset shell variable, which would otherwise name
    the current directory) is refused."""
    if not str(out_dir).strip():
        raise InputError(None, "--out", "a directory path", "an empty string")
    return os.path.abspath(out_dir)


def refuse_if_holds_cwd(out_dir: str) -> None:
    """Refuse to replace a directory that is, or holds, the current directory."""
    cwd = os.path.realpath(os.getcwd())
    real = os.path.realpath(out_dir)
    if cwd == real or cwd.startswith(real.rstrip(os.sep) + os.sep):
        raise InputError(out_dir, None, message="output directory holds the current directory and would be "
                                                "replaced; choose another --out")


def _umask() -> int:
    m = os.umask(0o022)
    os.umask(m)
    return m


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale(parent: str) -> list[str]:
    """Remove ``.qoelab-tmp-<pid>-*`` directories and files in ``parent`` whose process is gone."""
    removed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for n in names:
        if not n.startswith(TMP_PREFIX):
            continue
        path = os.path.join(parent, n)
        if is_stale(path, n):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            removed.append(n)
    return removed


@contextlib.contextmanager
def atomic_dir(out_dir: str):
    """``with atomic_dir(out) as tmp:`` write into ``tmp``; on success ``tmp`` replaces ``out``
    (a previous ``out`` is removed), on any exception (KeyboardInterrupt included) ``tmp`` is
    removed and ``out`` is left as it was. An ``out`` that did not exist when the work began and
    exists at its end (another command writing the same output at the same time) is not replaced:
    an :class:`InputError`, and ``tmp`` is removed (two runs both reported success, and the later
    silently replaced the earlier's results)."""
    out_dir = os.path.abspath(out_dir)
    existed = os.path.lexists(out_dir)
    parent = os.path.dirname(out_dir)
    try:
        os.makedirs(parent, exist_ok=True)
        clean_stale(parent)
        tmp = tempfile.mkdtemp(prefix=tmp_prefix(), dir=parent)
    except OSError as e:   # /proc/x, a read-only file system, a file where a folder must be
        raise _cannot_create(out_dir, e) from None
    try:
        os.chmod(tmp, 0o777 & ~_umask())
        yield tmp
        if os.path.lexists(out_dir) and existed:
            old = tempfile.mkdtemp(prefix=f"{tmp_prefix()}old-", dir=parent)
            os.rename(out_dir, os.path.join(old, "x"))
            os.rename(tmp, out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            try:
                os.rename(tmp, out_dir)     # (onto a directory made since: fails unless it is empty)
            except OSError:
                raise InputError(out_dir, None, message="appeared while this command was writing it (another "
                                                        "command with the same output?); not replaced: use another "
                                                        "output path, or remove it and run again") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def check_file(path: str, opt: str = "--out") -> str:
    """An output file's path, refused (before the work, where the caller checks early) when it cannot
    be written as a file: "" or an existing directory."""
    if not str(path).strip():
        raise InputError(None, opt, "a file path", "an empty string")
    if os.path.isdir(path) or str(path).endswith(os.sep):
        raise InputError(path, None, message=f"{opt} names a directory; expected a file path")
    if os.path.lexists(path) and not os.path.exists(path):
        raise InputError(path, None, message=f"{opt} names a dangling symbolic link or a link loop; expected a "
                                             "regular file path")
    if os.path.lexists(path) and not os.path.isfile(path):
        # a device, pipe or socket would be replaced by the renamed temporary file (as root, /dev/zero was)
        raise InputError(path, None, message=f"{opt} names a device, pipe or socket; expected a regular file path")
    creatable(path)
    return path


def write_text(path: str, text: str | bytes) -> None:
    """Write one text (or binary) file atomically (temporary sibling renamed into place; removed on
    failure)."""
    check_file(path, "output")
    d = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=tmp_prefix(), dir=d)
    except OSError as e:
        raise _cannot_create(path, e) from None
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def open_log(path: str, opt: str, mode: str = "a"):
    """Open a log file given on the command line (appending; a device such as /dev/stderr is fine),
    or one line naming ``opt`` when it cannot be opened (a folder, a missing parent, /proc)."""
    if not str(path).strip():
        raise InputError(None, opt, "a file path", "an empty string")
    _name_lengths(path)
    import stat
    try:
        if stat.S_ISFIFO(os.stat(path).st_mode):   # a FIFO nobody reads blocked the command before it began
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | (os.O_APPEND if "a" in mode else 0))
            os.set_blocking(fd, True)
            return os.fdopen(fd, mode, buffering=1)
    except FileNotFoundError:
        pass
    except OSError as e:
        why = "a pipe with no reader" if e.errno == 6 else (e.strerror or str(e))   # ENXIO
        raise InputError(_short(path), None, message=f"{opt}: cannot open the log: {why}") from None
    try:
        return open(path, mode, buffering=1)
    except OSError as e:
        raise InputError(_short(path), None, message=f"{opt}: cannot open the log: {e.strerror or e}") from None


def own_tmp_prefix(kind: str, base: str | None = None) -> str:
    """The name prefix of a temporary folder of this process, ``qoelab-<kind>-<pid>-``, after removing
    those of ``kind`` in ``base`` (default the temporary directory) whose process is gone."""
    sweep_stale(base or tempfile.gettempdir(), kind)
    return f"qoelab-{kind}-{os.getpid()}-"


def sweep_stale(base: str, kind: str) -> None:
    """Remove ``qoelab-<kind>-<pid>-*`` folders in ``base`` whose process is gone (it was killed: no
    cleanup ran). A pid in use again keeps its folder."""
    import re
    pat = re.compile(rf"qoelab-{re.escape(kind)}-(\d+)-")
    try:
        names = os.listdir(base)
    except OSError:
        return
    for n in names:
        m = pat.match(n)
        if m and int(m.group(1)) != os.getpid() and not os.path.exists(f"/proc/{m.group(1)}"):
            shutil.rmtree(os.path.join(base, n), ignore_errors=True)
