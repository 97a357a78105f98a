"""`meson install` gives a fresh machine everything the systemd unit needs.

Installs the build into a temporary DESTDIR (meson install --destdir) and checks what a plain
install leaves there: the program at the path the unit's ExecStart names, working; the
configuration the unit names (a copy of the example, kept as it is on a reinstall); an optional
secrets file; a state directory systemd makes itself (DynamicUser, StateDirectory) holding the
database; no restart on exit status 2, which the untouched configuration gives; the manual
page with its paths filled in (checked by groff when it is installed); and the unit itself
(checked by systemd-analyze verify when it is installed).

Run: MESON_BUILD_ROOT=build python3 -m unittest tests/test_install.py -v
"""

import os
import shutil
import subprocess
import tempfile
import unittest

BUILD = os.environ.get("MESON_BUILD_ROOT", "build")
MESON = os.environ.get("MESON", "meson")


def under(root, path):
    return os.path.join(root, path.lstrip("/"))


class InstallTest(unittest.TestCase):
    def setUp(self):
        self.dest = tempfile.mkdtemp(prefix="cardroom-install-")
        self.addCleanup(shutil.rmtree, self.dest, True)

    def install(self):
        done = subprocess.run([MESON, "install", "-C", BUILD, "--destdir", self.dest, "--no-rebuild", "--quiet"],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)

    def find(self, name):
        for top, _, files in os.walk(self.dest):
            if name in files:
                return os.path.join(top, name)
        self.fail(f"meson install put no {name} into {self.dest}")

    def unit(self):
        path = self.find("cardroom.service")
        settings = {}
        with open(path, encoding="utf-8") as f:
            for line in f:
                if "=" in line and not line.startswith("#"):
                    key, value = line.rstrip("\n").split("=", 1)
                    settings[key] = value
        self.assertTrue(os.path.dirname(path).endswith("lib/systemd/system"), path)
        return path, settings

    def test_the_unit_works_after_a_plain_install(self):
        self.install()
        path, unit = self.unit()
        self.assertNotIn("@", open(path, encoding="utf-8").read().replace("man:", ""),
                         "a path left unfilled in the unit")
        argv = unit["ExecStart"].split()
        program, config, db = argv[0], argv[argv.index("--config") + 1], argv[argv.index("--db") + 1]
        self.assertTrue(os.access(under(self.dest, program), os.X_OK), f"no program at {program}")
        version = subprocess.run([under(self.dest, program), "--version"], capture_output=True, text=True)
        self.assertRegex(version.stdout, r"^cardroom \d+\.\d+\.\d+\n$")
        example = self.find("cardroom.example.ini")
        with open(under(self.dest, config), encoding="utf-8") as got, open(example, encoding="utf-8") as want:
            self.assertEqual(got.read(), want.read(), "the configuration is not the example")
        self.assertEqual(unit["EnvironmentFile"], "-" + os.path.join(os.path.dirname(config), "secrets.env"),
                         "the secrets file must be optional and beside the configuration")
        # no user to make and no directory to create: systemd does both
        self.assertEqual(unit.get("DynamicUser"), "yes")
        self.assertEqual(unit.get("StateDirectory"), "cardroom")
        self.assertEqual(unit.get("WorkingDirectory"), "/var/lib/cardroom")
        self.assertEqual(os.path.dirname(db), "/var/lib/cardroom")
        # the untouched configuration names no network: exit 2, which is not restarted
        self.assertEqual(unit.get("RestartPreventExitStatus"), "2 3")
        with tempfile.TemporaryDirectory() as state:
            run = subprocess.run([under(self.dest, program), "run", "--config", under(self.dest, config), "--db",
                                  os.path.join(state, "cardroom.db")], capture_output=True, text=True, timeout=30)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("no chat network is configured", run.stderr)
        # the manual page, with the configuration's path in it
        page = self.find("cardroom.1")
        self.assertTrue(page.endswith("share/man/man1/cardroom.1"), page)
        text = open(page, encoding="ascii").read()
        self.assertIn(config, text)
        self.assertNotIn("@CONFIGDIR@", text)
        if shutil.which("groff"):
            lint = subprocess.run(["groff", "-man", "-ww", "-z", page], capture_output=True, text=True)
            self.assertEqual((lint.returncode, lint.stderr), (0, ""), "groff finds fault with the page")
        if shutil.which("systemd-analyze"):
            # verified as it stands, but running the program from where it was staged
            staged = os.path.join(self.dest, "cardroom.service")
            with open(path, encoding="utf-8") as f, open(staged, "w", encoding="utf-8") as out:
                out.write(f.read().replace(f"ExecStart={program} ", f"ExecStart={under(self.dest, program)} "))
            verify = subprocess.run(["systemd-analyze", "verify", "--man=no", staged], capture_output=True,
                                    text=True, timeout=60)
            self.assertEqual((verify.returncode, verify.stderr), (0, ""), "systemd-analyze finds fault with the unit")

    def test_a_reinstall_keeps_the_configuration(self):
        self.install()
        _, unit = self.unit()
        config = under(self.dest, unit["ExecStart"].split()[unit["ExecStart"].split().index("--config") + 1])
        with open(config, "a", encoding="utf-8") as f:
            f.write("\n[matrix]\nhomeserver = https://matrix.example.org\n")
        with open(config, encoding="utf-8") as f:
            edited = f.read()
        self.install()
        with open(config, encoding="utf-8") as f:
            self.assertEqual(f.read(), edited, "meson install overwrote the operator's configuration")


if __name__ == "__main__":
    unittest.main()
