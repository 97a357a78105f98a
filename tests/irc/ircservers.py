"""Real IRC servers (and a tiny synchronous IRC client) for end-to-end tests.

Python standard library only.  Debian packages needed at run time:
``ngircd inspircd anope openssl`` (``apt-get install -y ngircd inspircd anope``).

Everything a server needs (config, TLS certificate, databases, logs) is
generated into a fresh ``tempfile.mkdtemp(prefix="ircservers-")`` directory;
nothing is written into the repository and no system instance (port 6667,
/etc/..., /var/run/...) is used.  Ports are free loopback ports chosen at run
time, below the kernel's ephemeral range so that they cannot collide with
client sockets, and kept across ``restart()``.  Daemons run as child
processes in the foreground, in their own session, with core dumps disabled
and a parent-death signal (SIGKILL) so that they die with the test process.
``atexit`` kills everything that is still running and removes the temp dirs
(set ``IRCSERVERS_KEEP=1`` to keep the dirs for post-mortem).

How the daemons are started as root (no system user is created):

* ngircd: ``ngircd -n -f <tmp>/ngircd.conf`` (``-n`` = no fork).  ngircd
  refuses to keep uid 0 (it would switch to "nobody" by itself), so the
  harness starts it directly as uid/gid 65534 (nobody/nogroup, present in
  every Debian image; only the numeric ids are used).  No ChrootDir, no
  PidFile; DNS, IDENT and PAM are switched off; logs go to stderr.
* inspircd: ``inspircd --runasroot --nofork --config=<tmp>/inspircd.conf``;
  <path>/<pid>/<log> point into the temp dir, ``<dns server="127.0.0.1">``
  so that no resolver outside loopback is ever asked.
* anope: ``anope --nofork --confdir=<tmp>/anope/conf --dbdir=<tmp>/anope/data
  --logdir=<tmp>/anope/logs --modulesdir=/usr/lib/anope
  --localedir=/usr/share/anope/locale`` with uid 0 but gid 65534: anope
  prints a warning *and sleeps 3 s* when started with uid 0 *and* gid 0.
  It is started after inspircd listens on its server port and links with the
  ``inspircd3`` protocol module (casemap ``rfc1459`` to match inspircd).

ngircd 26.1 flood control (src/ngircd/conn.c; measured on this machine)
-----------------------------------------------------------------------
ngircd does not kill users for sending fast; it *throttles* them with
"penalty" seconds during which their socket is not even read.  It parses at
most 3 commands of a user per main-loop pass and sets a 1 s penalty when
more are pending or when the user sent > 256 bytes in the current second;
many commands add their own penalty (measured with the default
``MaxPenaltyTime = -1``: the first JOIN ~1 s, NAMES 2 s, WHO 1 s).  So with
the default a burst of 30 PRIVMSGs reaches the channel over ~9 s and one of
200 lines over ~70 s (~3 lines/s); nothing is lost or killed, the rest
waits in the kernel socket buffer.  ``MaxPenaltyTime = 0`` disables
penalties altogether; that is this harness's default (parameter
``max_penalty_time``): registration/JOIN/NAMES are instant and bursts are
relayed at once (200 lines < 0.1 s, 5000 lines of 400 bytes in ~2 s), still
nobody killed.  What does disconnect a client: a line longer than 512
bytes incl. CRLF -> ``ERROR :Request too long`` + close; a sendq over the
write buffer limit -> "Write buffer space exhausted".  The code also has
"Receive buffer space exhausted" (2 KiB unparsed input, closed without an
ERROR line) but line-based floods never triggered it here, even with
penalties off; an unterminated 5 KB line just stalls the connection.
ngircd offers only the ``multi-prefix`` cap; no SASL/account tags; user
mode +g is unknown (``501``), +C (common channel) gives the sender ``493``.

InspIRCd 3.15 flood control (<connect> class; measured on this machine)
-----------------------------------------------------------------------
Every command adds its penalty (1 for PRIVMSG/NOTICE/NICK..., JOIN and
registration commands count too) * 1000 to a per-user counter; once a second
``commandrate`` (millicommands/s) is subtracted.  When the counter reaches
``threshold`` * 1000:

* ``fakelag=False``: the user is quit with ``Excess Flood`` (it gets
  ``ERROR :Closing link: (user@host) [Excess Flood]``, channels see
  ``QUIT :Excess Flood``).  Measured with threshold=10, commandrate=5000:
  a burst of 9 PRIVMSGs survives, 10 (or 30) is killed after the first 10
  are relayed; right after JOIN the leftover registration/JOIN penalty
  makes a burst of 8 fatal.  Pacing at 4 lines/s (< 5) survives forever;
  6 lines/s is killed after ~6 s, 8 lines/s after ~2 s, i.e. when
  lines_sent - 5 * seconds >= 10.
* ``fakelag=True`` (InspIRCd's own default): over the threshold, input is
  held and processed at ``commandrate`` lines/s (threshold=10,
  commandrate=5000: 20-line burst = 10 at once + 10 over 2 s; with
  commandrate=2000 a 30-line burst took 10 s); nothing is lost unless the
  unprocessed input exceeds ``recvq`` bytes -> quit ``RecvQ exceeded``
  (e.g. 11 KB burst with recvq=4096, 16 KB with recvq=8192).
* InspIRCd reads up to 10 KiB (netbuffersize) at once and compares it with
  ``recvq`` before parsing, so a big burst can hit ``RecvQ exceeded`` even
  with fakelag off; ``softsendq`` bytes pending *to* a user pause its input,
  ``hardsendq`` quits it ("SendQ exceeded").

Harness defaults are lenient for game tests (threshold=1000,
commandrate=1000000, fakelag=False, recvq=65536); flood tests pass their own.
InspIRCd completes every client registration on its once-a-second timer,
so a connect takes up to 1 s: use ``connect_parallel``.
"""

from __future__ import annotations

import atexit
import base64
import ctypes
import os
import random
import re
import resource
import select
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time

__all__ = [
    "IrcMessage", "parse_message", "Client", "ClientError", "ServerError",
    "NgircdServer", "InspircdServer", "free_port", "make_cert",
    "connect_parallel",
]

DEFAULT_TIMEOUT = 30.0
NOBODY = 65534
LOOPBACK = "127.0.0.1"



class ServerError(RuntimeError):
    """A daemon failed to start or misbehaved."""


class ClientError(RuntimeError):
    """Registration/negotiation failed or an expected message did not come."""


# --------------------------------------------------------------------------
# helpers

_used_ports: set[int] = set()
_ports_lock = threading.Lock()


def free_port(host: str = LOOPBACK) -> int:
    """A currently free TCP port on `host`, below the ephemeral range."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    with _ports_lock:
        for _ in range(200):
            if low > 12000:
                port = random.randrange(10000, low - 1)
            else:  # odd kernel config: let the kernel choose
                port = 0
            if port in _used_ports:
                continue
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind((host, port))
                port = s.getsockname()[1]
            except OSError:
                continue
            finally:
                s.close()
            _used_ports.add(port)
            return port
    raise ServerError("no free port found")


def make_cert(directory: str, cn: str = "localhost") -> tuple[str, str, str]:
    """Self-signed cert (SAN IP:127.0.0.1, DNS:localhost), key and DH params
    generated with the openssl CLI.  Returns (cert_path, key_path, dh_path)."""
    cert = os.path.join(directory, "cert.pem")
    key = os.path.join(directory, "key.pem")
    dh = os.path.join(directory, "dh.pem")
    _run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
          "-keyout", key, "-out", cert, "-days", "30", "-subj", "/CN=" + cn,
          "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
    # RFC 7919 group: instant, unlike `openssl dhparam`.
    _run(["openssl", "genpkey", "-genparam", "-algorithm", "DH",
          "-pkeyopt", "group:ffdhe2048", "-out", dh])
    for p in (cert, key, dh):
        os.chmod(p, 0o644)  # ngircd runs as nobody; it's a throwaway key
    return cert, key, dh


def _run(argv):
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
    if r.returncode != 0:
        raise ServerError("%s failed (%d): %s" % (
            " ".join(argv), r.returncode, r.stdout.decode(errors="replace")))


try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover
    _libc = None


def _child_setup(gid=None, uid=None):
    """preexec_fn: no core dumps, optional credential drop, die with parent."""
    def fn():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if gid is not None:
            os.setgroups([])
            os.setgid(gid)
        if uid is not None:
            os.setuid(uid)
        if _libc is not None:  # PR_SET_PDEATHSIG after any setuid/setgid
            _libc.prctl(1, signal.SIGKILL, 0, 0, 0)
    return fn


def _listening(port, host=LOOPBACK):
    """Whether a TCP socket listens on host:port, read from the kernel's table
    (/proc/net/tcp): nothing connects to the daemon to find out."""
    want = "%s:%04X" % ("".join("%02X" % int(b) for b in reversed(host.split("."))), port)
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for row in f:
                fields = row.split()
                if fields[1] == want and fields[3] == "0A":  # 0A = LISTEN
                    return True
    except OSError:
        pass
    return False


def _wait_listening(port, proc, timeout, what, host=LOOPBACK):
    """Waits until the daemon listens on port (it binds its ports once at
    start; the kernel's socket table tells when)."""
    deadline = time.monotonic() + timeout
    while not _listening(port, host):
        if proc is not None and proc.poll() is not None:
            raise ServerError("%s exited with %s before listening on %d"
                              % (what, proc.returncode, port))
        if time.monotonic() > deadline:
            raise ServerError("%s not listening on %d after %.0fs"
                              % (what, port, timeout))
        time.sleep(0.02)


def _tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 200 * lines))
            data = f.read().decode(errors="replace")
    except OSError as e:
        return "<%s>" % e
    return "\n".join(data.splitlines()[-lines:])


# --------------------------------------------------------------------------
# servers

_live_servers: "set[_ServerBase]" = set()  # strong refs: atexit must see all


@atexit.register
def _cleanup_all():
    for srv in list(_live_servers):
        try:
            srv.cleanup(kill=True)
        except Exception:  # pragma: no cover - best effort at exit
            pass


class _Proc:
    """One managed daemon process with its stdout/stderr log file."""

    def __init__(self, name, argv, cwd, log_path, **popen_kw):
        self.name, self.argv, self.cwd, self.log_path = name, argv, cwd, log_path
        self.popen_kw = popen_kw
        self.popen = None

    def start(self):
        if self.running:
            return
        logf = open(self.log_path, "ab")
        try:
            logf.write(("\n=== %s start %s: %s\n" % (
                self.name, time.strftime("%H:%M:%S"),
                " ".join(self.argv))).encode())
            logf.flush()
            self.popen = subprocess.Popen(
                self.argv, cwd=self.cwd, stdin=subprocess.DEVNULL,
                stdout=logf, stderr=subprocess.STDOUT, start_new_session=True,
                close_fds=True, **self.popen_kw)
        finally:
            logf.close()

    @property
    def running(self):
        return self.popen is not None and self.popen.poll() is None

    @property
    def pid(self):
        return self.popen.pid if self.popen else None

    def _signal(self, sig):
        # the daemon leads its own session/process group (start_new_session)
        try:
            os.killpg(self.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            try:
                self.popen.send_signal(sig)
            except ProcessLookupError:
                pass

    def stop(self, timeout=5.0):
        """SIGTERM, then SIGKILL after `timeout` seconds."""
        if not self.running:
            return
        self._signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self):
        """SIGKILL and reap."""
        if self.popen is None:
            return
        if self.popen.poll() is None:
            self._signal(signal.SIGKILL)
        try:
            self.popen.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass


class _ServerBase:
    host = LOOPBACK
    oper_name = "admin"
    oper_password = "adminpass"

    def __init__(self, prefix):
        self.tmpdir = tempfile.mkdtemp(prefix="ircservers-%s-" % prefix)
        os.chmod(self.tmpdir, 0o755)
        self._procs: list[_Proc] = []
        self._logs: list[str] = []
        _live_servers.add(self)

    # -- lifecycle shared by subclasses
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.cleanup()

    def cleanup(self, kill=False):
        """Stop (or kill) everything and remove the temp dir (unless
        IRCSERVERS_KEEP=1)."""
        if kill:
            self.kill()
        else:
            self.stop()
        if self.tmpdir and not os.environ.get("IRCSERVERS_KEEP"):
            self._final_tail = self.tail(100)  # tail() still works afterwards
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None
        _live_servers.discard(self)

    def stop(self):
        for p in reversed(self._procs):
            p.stop()

    def kill(self):
        """SIGKILL every daemon of this server (simulated crash)."""
        for p in reversed(self._procs):
            p.kill()

    def restart(self, timeout=DEFAULT_TIMEOUT):
        """Stop (gracefully if still running) and start again on the same
        ports with the same config."""
        self.stop()
        self.start(timeout=timeout)

    @property
    def running(self):
        return bool(self._procs) and all(p.running for p in self._procs)

    @property
    def log_paths(self):
        return [p.log_path for p in self._procs] + list(self._logs)

    def tail(self, lines=40):
        """Tail of every log of this server, for failure messages (after
        cleanup(): the last 100 lines saved before the temp dir went)."""
        if self.tmpdir is None:
            return getattr(self, "_final_tail", "")
        out = []
        for path in self.log_paths:
            out.append("----- %s (last %d lines) -----\n%s"
                       % (path, lines, _tail(path, lines)))
        return "\n".join(out)

    def print_tail(self, lines=40):
        print(self.tail(lines), flush=True)

    def client(self, nick, **kw):
        """Client connected to this server (see Client for keywords;
        tls=True uses tls_port and cert_path)."""
        tls = kw.pop("tls", False)
        if tls:
            kw.setdefault("cafile", self.cert_path)
            return Client(self.host, self.tls_port, nick, tls=True, **kw)
        return Client(self.host, self.port, nick, **kw)

    def _write(self, name, text, mode=0o644):
        path = os.path.join(self.tmpdir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path


class NgircdServer(_ServerBase):
    """ngircd on 127.0.0.1: plain port, plus a TLS port if tls=True.

    max_penalty_time: ngircd ``[Limits] MaxPenaltyTime``; 0 (default here)
    disables command throttling so bursts are relayed at once; -1 is
    ngircd's default (bursts relayed at ~3 lines/s, see module docstring).
    """

    def __init__(self, tls=False, *, max_penalty_time=0, name="irc.ngircd.test",
                 max_nick_length=30, ping_timeout=120, pong_timeout=20,
                 extra_config=""):
        super().__init__("ngircd")
        self.tls = tls
        self.name = name
        self.port = free_port()
        self.tls_port = free_port() if tls else None
        self.cert_path = self.key_path = self.dh_path = None
        if tls:
            self.cert_path, self.key_path, self.dh_path = make_cert(self.tmpdir)
        motd = self._write("ngircd.motd", "ngircd test server\n")
        ssl_section = ""
        if tls:
            ssl_section = ("[SSL]\n\tCertFile = %s\n\tKeyFile = %s\n"
                           "\tDHFile = %s\n\tPorts = %d\n"
                           % (self.cert_path, self.key_path, self.dh_path,
                              self.tls_port))
        self.config_path = self._write("ngircd.conf", """\
[Global]
\tName = {name}
\tInfo = cardroom test server
\tAdminInfo1 = test
\tAdminInfo2 = test
\tAdminEMail = test@localhost
\tListen = {host}
\tPorts = {port}
\tMotdFile = {motd}
[Limits]
\tMaxConnections = 0
\tMaxConnectionsIP = 0
\tMaxJoins = 0
\tMaxNickLength = {nicklen}
\tMaxPenaltyTime = {penalty}
\tPingTimeout = {ping}
\tPongTimeout = {pong}
[Options]
\tDNS = no
\tIdent = no
\tPAM = no
\tOperCanUseMode = yes
[Operator]
\tName = {oper}
\tPassword = {operpw}
{ssl}{extra}
""".format(name=name, host=self.host, port=self.port, motd=motd,
           nicklen=max_nick_length, penalty=max_penalty_time,
           ping=ping_timeout, pong=pong_timeout, oper=self.oper_name,
           operpw=self.oper_password, ssl=ssl_section, extra=extra_config))
        self.proc = _Proc("ngircd", ["ngircd", "-n", "-f", self.config_path],
                          self.tmpdir, os.path.join(self.tmpdir, "ngircd.log"),
                          preexec_fn=_child_setup(gid=NOBODY, uid=NOBODY))
        self._procs = [self.proc]

    def start(self, timeout=DEFAULT_TIMEOUT):
        if self.proc.running:
            return self
        if shutil.which("ngircd") is None:
            raise ServerError("ngircd not installed (apt-get install ngircd)")
        self.proc.start()
        try:
            _wait_listening(self.port, self.proc.popen, timeout, "ngircd")
            if self.tls:
                _wait_listening(self.tls_port, self.proc.popen, timeout,
                                "ngircd (TLS)")
        except ServerError as e:
            raise ServerError("%s\n%s" % (e, self.tail())) from None
        return self


_INSPIRCD_CONF = """\
<server name="{name}" description="cardroom test server" network="TestNet" id="00A">
<admin name="Test" nick="test" email="test@localhost">
<path configdir="{d}" datadir="{d}" logdir="{d}" moduledir="/usr/lib/inspircd/modules">
<pid file="{d}/inspircd.pid">
<log method="file" type="* -USERINPUT -USEROUTPUT" level="default" target="{d}/inspircd.log">
<files motd="{d}/inspircd.motd">
<dns server="127.0.0.1" timeout="1">
<bind address="{host}" port="{port}" type="clients">
{tls_bind}
<bind address="{host}" port="{link_port}" type="servers">
<connect name="main" allow="*" timeout="20" pingfreq="{pingfreq}"
         threshold="{threshold}" commandrate="{commandrate}" fakelag="{fakelag}"
         recvq="{recvq}" softsendq="{softsendq}" hardsendq="{hardsendq}"
         localmax="1000" globalmax="1000" maxchans="100" limit="5000"
         resolvehostnames="no" useident="no">
<options prefixquit="Quit: " syntaxhints="no" announcets="yes" hostintopic="yes"
         pingwarning="15" splitwhois="no" exemptchanops="">
<security hideserver="" userstats="Pu" customversion="" flatlinks="no"
          hidesplits="no" hideulines="no" hidebans="no" maxtargets="20">
<performance quietbursts="yes" softlimit="1024" somaxconn="128" netbuffersize="10240">
<channels users="100" opers="100">
<limits maxnick="30" maxchan="64" maxuser="10" maxquit="255" maxtopic="307"
        maxkick="255" maxreal="128" maxaway="200">
<class name="All" commands="*" privs="*" usermodes="*" chanmodes="*" snomasks="*">
<type name="NetAdmin" classes="All" vhost="netadmin.test">
<oper name="{oper}" password="{operpw}" host="*@*" type="NetAdmin">
<module name="cap">
<module name="ircv3">
<ircv3 accountnotify="yes" awaynotify="yes" extendedjoin="yes">
<module name="ircv3_accounttag">
<module name="ircv3_servertime">
<module name="ircv3_ctctags">
<module name="ircv3_msgid">
<module name="ircv3_echomessage">
<module name="ircv3_capnotify">
<module name="ircv3_batch">
<module name="namesx">
<module name="uhnames">
<module name="monitor">
<module name="callerid">
<callerid maxaccepts="30" tracknick="no" cooldown="{callerid_cooldown}">
<module name="sasl">
<sasl target="{services_name}" requiressl="no">
<module name="services_account">
<module name="hidechans">
<module name="svshold">
<module name="chghost">
<module name="chgident">
<module name="chgname">
<module name="spanningtree">
<module name="ssl_gnutls">
<sslprofile name="Clients" provider="gnutls" certfile="{cert}" keyfile="{key}"
            dhfile="{dh}" requestclientcert="no">
<link name="{services_name}" ipaddr="127.0.0.1" port="{link_port}"
      sendpass="{linkpw}" recvpass="{linkpw}">
<uline server="{services_name}" silent="yes">
{extra}
"""

_ANOPE_CONF = """\
define {{ name = "services.host"; value = "{services_name}" }}
uplink {{ host = "127.0.0.1"; ipv6 = no; ssl = no; port = {link_port}; password = "{linkpw}" }}
serverinfo {{ name = "{services_name}"; description = "Test Services"; id = "00B";
  pid = "{d}/data/anope.pid"; motd = "{d}/conf/services.motd" }}
module {{ name = "inspircd3"; use_server_side_mlock = yes; use_server_side_topiclock = yes }}
networkinfo {{ networkname = "TestNet"; nicklen = 30; userlen = 10; hostlen = 64;
  chanlen = 64; modelistsize = 100;
  vhost_chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-";
  allow_undotted_vhosts = false; disallow_start_or_end = ".-" }}
options {{ casemap = "rfc1459"; seed = 1234567; strictpasswords = no; badpasslimit = 0;
  badpasstimeout = 1h; updatetimeout = 1s; expiretimeout = 30m; readtimeout = 1s;
  warningtimeout = 4h; timeoutcheck = 1s; retrywait = 1s;
  hideprivilegedcommands = yes; hideregisteredcommands = yes }}
log {{ target = "services.log"; logage = 1; admin = "*"; override = "*"; commands = "*";
  servers = "*"; users = "*"; other = "*"; rawio = no; debug = no }}
mail {{ usemail = no; sendfrom = "services@localhost" }}
module {{ name = "db_flatfile"; database = "anope.db"; keepbackups = 0; fork = no }}
module {{ name = "enc_sha256" }}
module {{ name = "help" }}
module {{ name = "m_sasl" }}
service {{ nick = "NickServ"; user = "services"; host = "services.host";
  gecos = "Nickname Registration Service" }}
module {{ name = "nickserv"; client = "NickServ"; forceemail = no; confirmemailchanges = no;
  defaults = "ns_private hide_email hide_mask"; regdelay = 0; expire = 0;
  secureadmins = yes; modeonid = yes; hidenetsplitquit = no; killquick = 20s;
  kill = 60s; enforceruser = "enforcer"; enforcerhost = "services.host";
  releasetimeout = 1m; guestnickprefix = "Guest"; nonicknameownership = yes;
  passlen = 32 }}
command {{ service = "NickServ"; name = "HELP"; command = "generic/help"; }}
module {{ name = "ns_register"; registration = "none"; resenddelay = 90s }}
command {{ service = "NickServ"; name = "REGISTER"; command = "nickserv/register"; }}
command {{ service = "NickServ"; name = "CONFIRM"; command = "nickserv/confirm"; }}
module {{ name = "ns_identify"; maxlogins = 100 }}
command {{ service = "NickServ"; name = "IDENTIFY"; command = "nickserv/identify"; }}
command {{ service = "NickServ"; name = "ID"; command = "nickserv/identify"; hide = true; }}
module {{ name = "ns_logout" }}
command {{ service = "NickServ"; name = "LOGOUT"; command = "nickserv/logout"; }}
module {{ name = "ns_info" }}
command {{ service = "NickServ"; name = "INFO"; command = "nickserv/info"; }}
module {{ name = "ns_status" }}
command {{ service = "NickServ"; name = "STATUS"; command = "nickserv/status"; }}
module {{ name = "ns_drop" }}
command {{ service = "NickServ"; name = "DROP"; command = "nickserv/drop"; }}
module {{ name = "ns_set" }}
command {{ service = "NickServ"; name = "SET"; command = "nickserv/set"; }}
command {{ service = "NickServ"; name = "SET PASSWORD"; command = "nickserv/set/password"; }}
{extra}
"""


class InspircdServer(_ServerBase):
    """InspIRCd 3 on 127.0.0.1 (plain + TLS port) linked to anope services
    (NickServ, SASL PLAIN/EXTERNAL) over a spanningtree server link.

    Flood settings of the single <connect> class (see module docstring):
    threshold (commands), commandrate (millicommands/s), fakelag (bool),
    recvq / softsendq / hardsendq (bytes); the defaults are lenient.
    callerid_cooldown: seconds between two 717/718 notifications for the
    same +g target (716 is sent for every blocked message).
    services=False: no anope (no NickServ, no 'sasl' cap).
    Oper: OPER admin adminpass.  Accounts: register_account().
    kill() SIGKILLs inspircd and anope; kill_ircd()/kill_services() one of
    them; start() starts whatever is not running and waits for the link.
    """

    services_name = "services.test"

    def __init__(self, tls=True, services=True, *, threshold=1000,
                 commandrate=1000 * 1000, fakelag=False, recvq=65536,
                 softsendq=65536, hardsendq=1048576, callerid_cooldown=60,
                 pingfreq=120, name="irc.inspircd.test", extra_config="",
                 extra_anope_config=""):
        super().__init__("inspircd")
        self.name = name
        self.tls = tls
        self.services = services
        self.threshold, self.commandrate, self.fakelag = threshold, commandrate, fakelag
        self.port = free_port()
        self.tls_port = free_port() if tls else None
        self.link_port = free_port()
        self.link_password = "linkpw%d" % random.randrange(10 ** 6)
        self.cert_path, self.key_path, self.dh_path = make_cert(self.tmpdir)
        self._write("inspircd.motd", "inspircd test server\n")
        tls_bind = ""
        if tls:
            tls_bind = '<bind address="%s" port="%d" type="clients" sslprofile="Clients">' % (
                self.host, self.tls_port)
        self.config_path = self._write("inspircd.conf", _INSPIRCD_CONF.format(
            name=name, d=self.tmpdir, host=self.host, port=self.port,
            tls_bind=tls_bind, link_port=self.link_port, linkpw=self.link_password,
            pingfreq=pingfreq, threshold=threshold, commandrate=commandrate,
            fakelag="yes" if fakelag else "no", recvq=recvq, softsendq=softsendq,
            hardsendq=hardsendq, oper=self.oper_name, operpw=self.oper_password,
            callerid_cooldown=callerid_cooldown, services_name=self.services_name,
            cert=self.cert_path, key=self.key_path, dh=self.dh_path,
            extra=extra_config))
        self.ircd = _Proc(
            "inspircd", ["inspircd", "--runasroot", "--nofork",
                         "--config=" + self.config_path],
            self.tmpdir, os.path.join(self.tmpdir, "inspircd.stdout.log"),
            preexec_fn=_child_setup())
        self._logs = [os.path.join(self.tmpdir, "inspircd.log")]
        self._procs = [self.ircd]
        self.anope = None
        if services:
            ad = os.path.join(self.tmpdir, "anope")
            for sub in ("conf", "data", "data/backups", "logs"):
                os.makedirs(os.path.join(ad, sub))
            self._write("anope/conf/services.motd", "test services\n")
            self._write("anope/conf/services.conf", _ANOPE_CONF.format(
                services_name=self.services_name, link_port=self.link_port,
                linkpw=self.link_password, d=ad, extra=extra_anope_config))
            self.anope_db = os.path.join(ad, "data", "anope.db")
            # gid != 0 avoids anope's "running as root" 3 s sleep.
            self.anope = _Proc(
                "anope", ["anope", "--nofork", "--confdir=" + ad + "/conf",
                          "--dbdir=" + ad + "/data", "--logdir=" + ad + "/logs",
                          "--modulesdir=/usr/lib/anope",
                          "--localedir=/usr/share/anope/locale"],
                ad, os.path.join(self.tmpdir, "anope.stdout.log"),
                preexec_fn=_child_setup(gid=NOBODY))
            self._procs.append(self.anope)

    @property
    def log_paths(self):
        paths = super().log_paths
        if self.anope is not None and self.tmpdir:
            logdir = os.path.join(self.tmpdir, "anope", "logs")
            if os.path.isdir(logdir):
                paths += [os.path.join(logdir, n) for n in sorted(os.listdir(logdir))]
        return paths

    def start(self, timeout=DEFAULT_TIMEOUT):
        """Start inspircd (if not running), then anope (if not running) and
        wait until services are linked (NickServ online, 'sasl' cap)."""
        for exe in ["inspircd"] + (["anope"] if self.services else []):
            if shutil.which(exe) is None and not os.path.exists("/usr/sbin/" + exe):
                raise ServerError("%s not installed (apt-get install %s)" % (exe, exe))
        try:
            if not self.ircd.running:
                self.ircd.start()
                _wait_listening(self.port, self.ircd.popen, timeout, "inspircd")
                _wait_listening(self.link_port, self.ircd.popen, timeout,
                                "inspircd (server port)")
                if self.tls:
                    _wait_listening(self.tls_port, self.ircd.popen, timeout,
                                    "inspircd (TLS)")
            if self.anope is not None:
                if not self.anope.running:
                    self.anope.start()
                self.wait_services(timeout)
        except (ServerError, ClientError) as e:
            raise ServerError("%s\n%s" % (e, self.tail())) from None
        return self

    def start_services(self, timeout=DEFAULT_TIMEOUT):
        """(Re)start anope only, e.g. after kill_services()."""
        self.anope.start()
        self.wait_services(timeout)

    def kill_ircd(self):
        """SIGKILL inspircd only (anope keeps running and relinks after
        start())."""
        self.ircd.kill()

    def kill_services(self):
        self.anope.kill()

    def wait_services(self, timeout=DEFAULT_TIMEOUT):
        """Wait until NickServ is on the network and 'sasl' is offered.  One
        client waits for both events: CAP NEW (cap-notify) names 'sasl' when
        services link, MONITOR's 730 says when NickServ comes online."""
        if self.anope is not None and not self.anope.running:
            raise ServerError("anope exited with %s" % self.anope.popen.returncode)

        def sasl_change(m):
            """+1 when m offers sasl (CAP LS or NEW), -1 when it takes it away
            (CAP DEL), 0 otherwise."""
            if m.command != "CAP" or len(m.params) < 3 or \
                    "sasl" not in [c.partition("=")[0] for c in m.params[-1].split()]:
                return 0
            return {"LS": 1, "NEW": 1, "DEL": -1}.get(m.params[1].upper(), 0)

        try:
            with Client(self.host, self.port, "probe%d" % random.randrange(10 ** 6),
                        caps=("cap-notify",), strict_caps=False, timeout=timeout) as c:
                seen = len(c.received)
                offered = 0
                for m in c.received[:seen]:
                    offered = sasl_change(m) or offered
                if offered != 1:
                    c.read_until(lambda m: sasl_change(m) == 1, timeout, start=seen)
                c.send("MONITOR + NickServ")
                c.read_until("730", timeout)
        except ClientError as e:
            state = "" if self.anope is None or self.anope.running else \
                " (anope exited with %s)" % self.anope.popen.returncode
            raise ServerError("services not linked after %.0fs%s: %s" % (timeout, state, e)) from None

    def register_account(self, name, password, email=None, timeout=DEFAULT_TIMEOUT,
                         persist=True):
        """Register NickServ account `name` (via a throwaway client using
        nick `name`).  Waits for NickServ's confirmation; with persist=True
        also until anope has written it to its database (so it survives
        kill()/restart()).  Passwords must be >= 5 chars."""
        if self.anope is None:
            raise ServerError("no services")
        with Client(self.host, self.port, name, timeout=timeout) as c:
            if c.current_nick.lower() != name.lower():
                raise ClientError("could not get nick %s (got %s)" % (name, c.current_nick))
            cmd = "REGISTER %s" % password + (" %s" % email if email else "")
            c.privmsg("NickServ", cmd)
            m = c.read_until(lambda m: m.command == "NOTICE" and m.nick == "NickServ",
                             timeout=timeout)
            if "registered" not in m.params[-1].lower():
                raise ClientError("NickServ REGISTER %s failed: %s" % (name, m.params[-1]))
            c.quit()
        if persist:
            self._wait_db(name, timeout)

    def _wait_db(self, name, timeout):
        deadline = time.monotonic() + timeout
        pat = re.compile(r"^DATA display %s$" % re.escape(name), re.M | re.I)
        while time.monotonic() < deadline:
            try:
                with open(self.anope_db) as f:
                    if pat.search(f.read()):
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise ServerError("account %s not saved to %s" % (name, self.anope_db))


# --------------------------------------------------------------------------
# client

_TAG_UNESCAPE = {":": ";", "s": " ", "\\": "\\", "r": "\r", "n": "\n"}


def _unescape_tag(v):
    out, i = [], 0
    while i < len(v):
        ch = v[i]
        if ch == "\\" and i + 1 < len(v):
            out.append(_TAG_UNESCAPE.get(v[i + 1], v[i + 1]))
            i += 2
        elif ch == "\\":
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


class IrcMessage:
    """A parsed IRC line: tags (dict), prefix (str|None), command (upper
    case str), params (list, trailing included), raw line, monotonic time."""

    __slots__ = ("tags", "prefix", "command", "params", "raw", "time")

    def __init__(self, tags, prefix, command, params, raw="", t=None):
        self.tags, self.prefix, self.command, self.params = tags, prefix, command, params
        self.raw = raw
        self.time = time.monotonic() if t is None else t

    @property
    def nick(self):
        """Nick (or server name) of the prefix, or None."""
        if self.prefix is None:
            return None
        return self.prefix.split("!", 1)[0]

    @property
    def account(self):
        return self.tags.get("account")

    @property
    def trailing(self):
        return self.params[-1] if self.params else ""

    def __repr__(self):
        return "IrcMessage(%r)" % self.raw


def parse_message(line: str) -> IrcMessage:
    raw = line
    tags = {}
    if line.startswith("@"):
        tagstr, _, line = line[1:].partition(" ")
        for item in tagstr.split(";"):
            if not item:
                continue
            k, eq, v = item.partition("=")
            tags[k] = _unescape_tag(v) if eq else ""
    line = line.lstrip(" ")
    prefix = None
    if line.startswith(":"):
        prefix, _, line = line[1:].partition(" ")
        line = line.lstrip(" ")
    trailing = None
    if line.startswith(":"):
        trailing, line = line[1:], ""
    else:
        line, sep, rest = line.partition(" :")
        if sep:
            trailing = rest
    parts = line.split()
    command = parts[0].upper() if parts else ""
    params = parts[1:]
    if trailing is not None:
        params.append(trailing)
    return IrcMessage(tags, prefix, command, params, raw)


def _casefold(s):
    """rfc1459 case mapping."""
    return s.lower().translate(str.maketrans("[]\\~", "{}|^"))


class Client:
    """Small synchronous IRC client for tests.

    Connects and registers in the constructor (unless connect=False):
    optional ``CAP LS 302`` + ``CAP REQ`` of `caps`, optional SASL PLAIN
    (`sasl=(account, password)`), NICK/USER, then waits for 001.  A
    background I/O thread reads (answering PING), and writes what send()
    queued.  Every received message is appended to ``self.received``.

    read_until(pred) scans received messages after the read cursor, returns
    the first match (cursor moves past it) or raises ClientError on timeout.
    """

    def __init__(self, host, port, nick, *, tls=False, cafile=None,
                 caps=(), request_caps=True, sasl=None, username=None,
                 realname=None, password=None, timeout=DEFAULT_TIMEOUT,
                 connect=True, strict_caps=True, name=None):
        self.host, self.port, self.tls, self.cafile = host, port, tls, cafile
        self.current_nick = nick
        self.want_caps = list(caps)
        self.request_caps = request_caps
        self.strict_caps = strict_caps
        self.sasl = sasl
        self.username = username or re.sub(r"[^a-zA-Z0-9]", "", nick)[:10] or "user"
        self.realname = realname or "cardroom test client"
        self.password = password
        self.timeout = timeout
        self.name = name or nick
        self.received: list[IrcMessage] = []
        self.sent: list[str] = []
        self.cursor = 0
        self.offered_caps: dict[str, str] = {}
        self.acked_caps: set[str] = set()
        self.isupport: dict[str, str] = {}
        self.members: dict[str, set[str]] = {}  # casefolded channel -> casefolded nicks
        self._names: dict[str, set[str]] = {}   # NAMES replies being read (353 ... 366)
        self.account = None
        self.registered = False
        self.closed = threading.Event()
        self.close_reason = None
        self._cond = threading.Condition()
        self._out = bytearray()
        self._sock = None
        self._thread = None
        self._wake_r = self._wake_w = None
        self._stopping = False
        if connect:
            self.connect()

    def casefold(self, name):
        """Case-fold a nick/channel with the server's CASEMAPPING."""
        if self.isupport.get("CASEMAPPING", "rfc1459") == "ascii":
            return name.lower()
        return _casefold(name)

    # -- context manager
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<Client %s %s:%s%s>" % (self.current_nick, self.host, self.port,
                                         " tls" if self.tls else "")

    # -- connection
    def connect(self):
        sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls:
            ctx = ssl.create_default_context(cafile=self.cafile)
            if self.cafile is None:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            sock = ctx.wrap_socket(sock, server_hostname=self.host)
        sock.setblocking(False)
        self._sock = sock
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._thread = threading.Thread(target=self._io_loop, daemon=True,
                                        name="irc-client-%s" % self.name)
        self._thread.start()
        try:
            self._register()
        except BaseException:
            self.close()
            raise
        return self

    def _register(self):
        start = len(self.received)
        if self.password:
            self.send("PASS " + self.password)
        negotiate = bool(self.want_caps) or bool(self.sasl) or not self.request_caps
        if negotiate:
            self.send("CAP LS 302")
        self.send("NICK " + self.current_nick)
        self.send("USER %s 0 * :%s" % (self.username, self.realname))
        if negotiate:
            self._negotiate_caps(start)
            self.send("CAP END")
        m = self._wait(lambda m: m.command in ("001", "432", "433", "436", "437",
                                               "465", "ERROR"),
                       self.timeout, start, "001 welcome")
        if m.command != "001":
            raise ClientError("registration of %s failed: %s" % (self.current_nick, m.raw))
        self.current_nick = m.params[0]
        self.registered = True
        # wait for end of MOTD/ISUPPORT so tests start from a quiet state
        self._wait(lambda m: m.command in ("376", "422"), self.timeout, start,
                   "end of MOTD")
        self.cursor = len(self.received)

    def _negotiate_caps(self, start):
        idx = start
        while True:
            m = self._wait(lambda m: m.command == "CAP" and len(m.params) >= 3
                           and m.params[1].upper() == "LS", self.timeout, idx, "CAP LS")
            idx = self.received.index(m) + 1
            for item in m.params[-1].split():
                k, _, v = item.partition("=")
                self.offered_caps[k] = v
            if not (len(m.params) >= 4 and m.params[2] == "*"):
                break
        want = list(dict.fromkeys(self.want_caps + (["sasl"] if self.sasl else [])))
        if not self.request_caps or not want:
            return
        missing = [c for c in want if c not in self.offered_caps]
        if missing and self.strict_caps:
            raise ClientError("caps %s not offered by server (offered: %s)"
                              % (missing, " ".join(sorted(self.offered_caps))))
        want = [c for c in want if c in self.offered_caps]
        if want:
            self.send("CAP REQ :" + " ".join(want))
            m = self._wait(lambda m: m.command == "CAP" and len(m.params) >= 3 and
                           m.params[1].upper() in ("ACK", "NAK"), self.timeout, idx,
                           "CAP ACK")
            idx = self.received.index(m) + 1
            if m.params[1].upper() == "NAK":
                raise ClientError("CAP REQ refused: " + m.raw)
            self.acked_caps.update(c.lstrip("-=~") for c in m.params[-1].split())
        if self.sasl:
            if "sasl" not in self.acked_caps:
                raise ClientError("sasl cap not acknowledged")
            mechs = self.offered_caps.get("sasl", "")
            if mechs and "PLAIN" not in mechs.upper().split(","):
                raise ClientError("SASL PLAIN not offered (%s)" % mechs)
            user, pw = self.sasl
            self.send("AUTHENTICATE PLAIN")
            self._wait(lambda m: m.command == "AUTHENTICATE", self.timeout, idx,
                       "AUTHENTICATE +")
            payload = base64.b64encode(("%s\0%s\0%s" % (user, user, pw)).encode()).decode()
            while True:  # 400-byte chunks; a final "+" if exact multiple
                chunk, payload = payload[:400], payload[400:]
                self.send("AUTHENTICATE " + chunk)
                if len(chunk) < 400:
                    break
                if not payload:
                    self.send("AUTHENTICATE +")
                    break
            m = self._wait(lambda m: m.command in ("903", "902", "904", "905", "906",
                                                   "907", "908", "ERROR"),
                           self.timeout, idx, "SASL result")
            if m.command != "903":
                raise ClientError("SASL PLAIN as %s failed: %s" % (user, m.raw))
            for m in self.received[idx:]:
                if m.command == "900" and len(m.params) >= 3:
                    self.account = m.params[2]

    def close(self):
        """Close the socket (without QUIT) and stop the I/O thread."""
        self._stopping = True
        self._wake()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)
        for fd in (self._wake_r, self._wake_w):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._wake_r = self._wake_w = None
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
        self.closed.set()

    def quit(self, message="bye", timeout=2.0):
        """Send QUIT and wait (briefly) for the server to close."""
        if not self.closed.is_set():
            self.send("QUIT :" + message)
            self.closed.wait(timeout)
        self.close()

    # -- I/O thread
    def _wake(self):
        if self._wake_w is not None:
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass

    def _io_loop(self):
        sock = self._sock
        inbuf = b""
        try:
            while not self._stopping:
                with self._cond:
                    # only this thread removes from the head of _out, so a
                    # retried TLS write always re-sends the same bytes
                    chunk = bytes(self._out[:16384])
                pending = self.tls and sock.pending()
                if not pending:
                    r, w, _ = select.select([sock, self._wake_r],
                                            [sock] if chunk else [], [], 1.0)
                else:
                    r, w = [sock], []
                if self._wake_r in r:
                    try:
                        os.read(self._wake_r, 4096)
                    except OSError:
                        pass
                if sock in w and chunk:
                    try:
                        n = sock.send(chunk)
                        with self._cond:
                            del self._out[:n]
                            self._cond.notify_all()
                    except (ssl.SSLWantWriteError, ssl.SSLWantReadError,
                            BlockingIOError, InterruptedError):
                        pass
                if sock in r:
                    try:
                        data = sock.recv(65536)
                    except (ssl.SSLWantReadError, ssl.SSLWantWriteError,
                            BlockingIOError, InterruptedError):
                        continue
                    if not data:
                        self.close_reason = self.close_reason or "EOF"
                        break
                    inbuf += data
                    *lines, inbuf = inbuf.split(b"\n")
                    for raw in lines:
                        self._handle_line(raw.rstrip(b"\r").decode("utf-8", "replace"))
        except (OSError, ValueError) as e:
            if not self._stopping:
                self.close_reason = self.close_reason or repr(e)
        finally:
            try:
                sock.close()
            except OSError:
                pass
            with self._cond:
                self.closed.set()
                self._cond.notify_all()

    def _handle_line(self, line):
        if not line:
            return
        m = parse_message(line)
        if m.command == "PING":
            self._queue(("PONG :%s" % (m.params[-1] if m.params else "")).encode() + b"\r\n")
        elif m.command == "005":
            for tok in m.params[1:-1]:
                k, _, v = tok.partition("=")
                self.isupport[k] = v
        elif m.command == "900" and len(m.params) >= 3:
            self.account = m.params[2]
        elif m.command == "901":
            self.account = None
        elif m.command == "ERROR":
            self.close_reason = m.trailing
        with self._cond:
            self._track_members(m)
            if m.command == "NICK" and m.nick and self.casefold(m.nick) == self.casefold(self.current_nick):
                self.current_nick = m.params[0]
            self.received.append(m)
            self._cond.notify_all()

    def _track_members(self, m):
        """Keeps self.members up to date from what the server tells: NAMES
        replies, JOIN, PART, KICK, QUIT and NICK (under self._cond)."""
        f = self.casefold
        me = f(self.current_nick)
        if m.command == "353" and len(m.params) >= 3:
            names = self._names.setdefault(f(m.params[-2]), set())
            for item in m.params[-1].split():
                names.add(f(item.lstrip("~&@%+!").split("!", 1)[0]))
        elif m.command == "366" and len(m.params) >= 2:
            self.members[f(m.params[1])] = self._names.pop(f(m.params[1]), set())
        elif not m.nick or not m.params:
            return
        elif m.command == "JOIN":
            chan = f(m.params[0])
            if f(m.nick) == me:
                self.members[chan] = set()  # the NAMES reply that follows fills it
            self.members.setdefault(chan, set()).add(f(m.nick))
        elif m.command == "PART":
            if f(m.nick) == me:
                self.members.pop(f(m.params[0]), None)
            else:
                self.members.get(f(m.params[0]), set()).discard(f(m.nick))
        elif m.command == "KICK" and len(m.params) >= 2:
            if f(m.params[1]) == me:
                self.members.pop(f(m.params[0]), None)
            else:
                self.members.get(f(m.params[0]), set()).discard(f(m.params[1]))
        elif m.command == "QUIT":
            for nicks in self.members.values():
                nicks.discard(f(m.nick))
        elif m.command == "NICK":
            for nicks in self.members.values():
                if f(m.nick) in nicks:
                    nicks.discard(f(m.nick))
                    nicks.add(f(m.params[0]))

    def _queue(self, data: bytes):
        with self._cond:
            self._out += data
        self._wake()

    # -- sending
    def send(self, line: str):
        """Queue one raw line (CRLF added)."""
        if "\n" in line or "\r" in line:
            raise ValueError("line contains CR/LF: %r" % line)
        self.sent.append(line)
        self._queue(line.encode("utf-8") + b"\r\n")

    def send_lines(self, lines):
        """Queue many lines at once (they leave in as few writes as possible:
        a burst)."""
        data = b""
        for line in lines:
            self.sent.append(line)
            data += line.encode("utf-8") + b"\r\n"
        self._queue(data)

    def flush(self, timeout=DEFAULT_TIMEOUT):
        """Wait until everything queued has been handed to the kernel."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._out and not self.closed.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ClientError("%s: flush timed out" % self.name)
                self._cond.wait(left)

    def privmsg(self, target, text):
        self.send("PRIVMSG %s :%s" % (target, text))

    def notice(self, target, text):
        self.send("NOTICE %s :%s" % (target, text))

    def mode(self, *args):
        self.send("MODE " + " ".join(args))

    def accept(self, nick):
        """callerid ACCEPT (+g allow list)."""
        self.send("ACCEPT " + nick)

    def join(self, channel, key=None, wait=True, timeout=None):
        """JOIN and (by default) wait for our JOIN echo and end of NAMES."""
        start = len(self.received)
        self.send("JOIN %s%s" % (channel, " " + key if key else ""))
        if wait:
            cf = self.casefold(channel)
            self._wait(lambda m: m.command in ("JOIN",) and m.nick
                       and self.casefold(m.nick) == self.casefold(self.current_nick)
                       and m.params and self.casefold(m.params[0]) == cf
                       or (m.command in ("403", "405", "471", "473", "474", "475", "477")),
                       timeout or self.timeout, start, "JOIN %s" % channel)
            m = self._wait(lambda m: m.command in ("366", "403", "405", "471", "473",
                                                   "474", "475", "477"),
                           timeout or self.timeout, start, "366 for %s" % channel)
            if m.command != "366":
                raise ClientError("JOIN %s failed: %s" % (channel, m.raw))

    def part(self, channel, reason="bye"):
        self.send("PART %s :%s" % (channel, reason))

    def nick(self, new, wait=True, timeout=None):
        """NICK new; by default wait until the server confirmed it (the
        current nick is in .current_nick)."""
        start = len(self.received)
        old = self.current_nick
        self.send("NICK " + new)
        if wait:
            m = self._wait(lambda m: (m.command == "NICK" and m.nick
                                      and self.casefold(m.nick) == self.casefold(old))
                           or m.command in ("432", "433", "436", "437", "438"),
                           timeout or self.timeout, start, "NICK %s" % new)
            if m.command != "NICK":
                raise ClientError("NICK %s failed: %s" % (new, m.raw))
            self.current_nick = m.params[0]

    # -- receiving
    def _wait(self, pred, timeout, start, what="message"):
        """Non-consuming wait for the first message at index >= start."""
        deadline = time.monotonic() + timeout
        idx = start
        with self._cond:
            while True:
                while idx < len(self.received):
                    m = self.received[idx]
                    idx += 1
                    if pred(m):
                        return m
                if self.closed.is_set():
                    raise ClientError("%s: connection closed (%s) while waiting for %s"
                                      "\n%s" % (self.name, self.close_reason, what,
                                                self.transcript()))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ClientError("%s: timeout (%.1fs) waiting for %s\n%s"
                                      % (self.name, timeout, what, self.transcript()))
                self._cond.wait(left)

    @staticmethod
    def _make_pred(predicate, command=None):
        if predicate is None:
            return lambda m: command is None or m.command == command
        if isinstance(predicate, str):
            cmd = predicate.upper()
            return lambda m: m.command == cmd
        return predicate

    def read_until(self, predicate=None, timeout=None, *, start=None):
        """First received message after the cursor (or index `start`) that
        matches `predicate` (callable(IrcMessage)->bool, or a command string
        like "PRIVMSG"/"716").  Moves the cursor past it.  Raises
        ClientError on timeout or if the connection closed."""
        pred = self._make_pred(predicate)
        begin = self.cursor if start is None else start
        m = self._wait(pred, self.timeout if timeout is None else timeout, begin,
                       getattr(predicate, "__name__", str(predicate)))
        with self._cond:
            self.cursor = max(self.cursor, self.received.index(m, begin) + 1)
        return m

    def wait_privmsg(self, text=None, sender=None, target=None, timeout=None,
                     command="PRIVMSG"):
        """read_until a PRIVMSG (or NOTICE) with the given text/sender/target."""
        def pred(m):
            return (m.command == command and len(m.params) >= 2
                    and (text is None or m.params[1] == text)
                    and (sender is None or self.casefold(m.nick or "") == self.casefold(sender))
                    and (target is None or self.casefold(m.params[0]) == self.casefold(target)))
        pred.__name__ = "%s %s from %s: %r" % (command, target, sender, text)
        return self.read_until(pred, timeout)

    def wait_until(self, predicate, timeout=None, what="a condition"):
        """Waits until predicate() (which reads what this client received) is true, asking
        again at each message this client receives; returns its value.  ClientError on
        timeout or if the connection closed."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = predicate()
                if value:
                    return value
                if self.closed.is_set():
                    raise ClientError("%s: connection closed (%s) while waiting for %s\n%s"
                                      % (self.name, self.close_reason, what, self.transcript()))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ClientError("%s: timeout (%.1fs) waiting for %s\n%s"
                                      % (self.name, timeout, what, self.transcript()))
                self._cond.wait(left)

    def wait_closed(self, timeout=None):
        """Wait until the server closed the connection; returns the ERROR
        message (or None if there was none)."""
        if not self.closed.wait(self.timeout if timeout is None else timeout):
            raise ClientError("%s: connection still open\n%s" % (self.name, self.transcript()))
        if self._thread is not None:
            self._thread.join(2)
        errs = [m for m in self.received if m.command == "ERROR"]
        return errs[-1] if errs else None

    def names(self, channel, timeout=None):
        """NAMES channel -> set of nicks (prefixes like @+ and !user@host
        stripped)."""
        start = len(self.received)
        self.send("NAMES " + channel)
        cf = self.casefold(channel)
        end = self._wait(lambda m: m.command == "366" and len(m.params) >= 2
                         and self.casefold(m.params[1]) == cf,
                         timeout or self.timeout, start, "366 for %s" % channel)
        nicks = set()
        with self._cond:
            msgs = self.received[start:self.received.index(end, start)]
        for m in msgs:
            if m.command == "353" and self.casefold(m.params[-2]) == cf:
                for item in m.params[-1].split():
                    nicks.add(item.lstrip("~&@%+!").split("!", 1)[0])
        return nicks

    def wait_nick_in_channel(self, channel, nick, timeout=None, present=True):
        """Wait until `nick` is (or with present=False, is no longer) in
        `channel`, as the server tells this client (the NAMES reply to its
        JOIN, then JOIN, PART, KICK, QUIT and NICK lines): nothing is asked
        of the server."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        chan, who = self.casefold(channel), self.casefold(nick)
        with self._cond:
            while (who in self.members.get(chan, set())) != present:
                if self.closed.is_set():
                    raise ClientError("%s: connection closed (%s) while waiting for %s in %s\n%s"
                                      % (self.name, self.close_reason, nick, channel,
                                         self.transcript()))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ClientError("%s: %s %s %s after %.1fs (members: %s)\n%s" % (
                        self.name, nick, "not in" if present else "still in", channel,
                        timeout, sorted(self.members.get(chan, set())), self.transcript()))
                self._cond.wait(left)

    def transcript(self, lines=25):
        """Last received/sent lines, for failure messages."""
        with self._cond:
            recv = [m.raw[:300] for m in self.received[-lines:]]
        sent = [s[:300] for s in self.sent[-10:]]
        return ("  last received by %s:\n    " % self.name + "\n    ".join(recv) +
                "\n  last sent:\n    " + "\n    ".join(sent))


def connect_parallel(*clients, timeout=None):
    """Connect several Client(..., connect=False) objects concurrently and
    return them (InspIRCd finishes registrations only on its once-a-second
    timer, so sequential connects cost up to 1 s each).  Re-raises the first
    error after closing all clients."""
    errors = []

    def run(c):
        try:
            if timeout is not None:
                c.timeout = timeout
            c.connect()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(c,), daemon=True) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for c in clients:
            c.close()
        raise errors[0]
    return list(clients)
