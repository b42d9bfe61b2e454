#!/usr/bin/env python3
"""scripts/run_records.sh on ablation directories made here: which runs it packs (finished ones,
once), what an archive holds (no checkpoints, lock or cached data; checkpoint_best.pt of a run
that fine-tunes start from, or where RUN_RECORDS_KEEP_BEST matches), trained runs' records with their
best checkpoint (pack-trained), packed again as they gain evaluations, until the finished record
replaces them, and what unpacking keeps,
replaces and refuses."""
import fcntl
import os
import pathlib
import re
import subprocess
import tarfile
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "run_records.sh"


def run(*args, env=None):
    return subprocess.run(["bash", str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def make_run(out, name, finished=True, extra=None):
    run_dir = out / "runs" / name
    (run_dir / "data").mkdir(parents=True)
    (run_dir / "data" / "train.bin").write_bytes(b"cached")
    (run_dir / "config.yaml").write_text(f"task: lm  # {name}\n")
    (run_dir / "eval.test.ctx512.json").write_text('{"perplexity": 2.9}\n')
    (run_dir / "checkpoint_best.pt").write_bytes(b"weights")
    (run_dir / "checkpoint_last.pt").write_bytes(b"weights")
    (run_dir / ".lock").write_text("123 ropelab train\n")
    if finished:
        (run_dir / "ablation.done").write_text("")
    for file, text in (extra or {}).items():
        (run_dir / file).write_text(text)
    (out / "runs" / f"{name}.log").write_text(f"log of {name}\n")
    return run_dir


def members(archive):
    with tarfile.open(archive) as tar:
        return sorted(tar.getnames())


class RunRecords(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name)
        self.out = self.root / "out"

    def tearDown(self):
        self.tmp.cleanup()

    def assertLockNamesTheUnpack(self, out):
        """OUT/.lock names the unpack as its holder: the line an ablate refused meanwhile prints."""
        self.assertRegex((out / ".lock").read_text(),
                         rf"^\d+ {re.escape(f'scripts/run_records.sh unpack {out}')}\n$")

    def test_packs_each_finished_run_once_without_checkpoints_lock_or_data(self):
        make_run(self.out, "alibi.seed1")
        make_run(self.out, "alibi.seed2", finished=False)
        first = run("pack", self.out)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertIn("1 runs packed", first.stdout)
        records = self.out / "records"
        self.assertEqual(sorted(p.name for p in records.iterdir()), ["alibi.seed1.tar.xz"])
        self.assertEqual(members(records / "alibi.seed1.tar.xz"),
                         ["runs/alibi.seed1.log", "runs/alibi.seed1/ablation.done", "runs/alibi.seed1/config.yaml",
                          "runs/alibi.seed1/eval.test.ctx512.json"])
        again = run("pack", self.out)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("0 runs packed into", again.stdout)
        self.assertIn("1 there already", again.stdout)

    def test_keeps_the_best_checkpoint_of_the_runs_the_pattern_names(self):
        make_run(self.out, "rotary.seed1")
        make_run(self.out, "alibi.seed1")
        done = run("pack", self.out, self.root / "records", env={"RUN_RECORDS_KEEP_BEST": "rotary.seed*"})
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("runs/rotary.seed1/checkpoint_best.pt", members(self.root / "records" / "rotary.seed1.tar.xz"))
        self.assertNotIn("runs/alibi.seed1/checkpoint_best.pt", members(self.root / "records" / "alibi.seed1.tar.xz"))
        self.assertNotIn("runs/rotary.seed1/checkpoint_last.pt", members(self.root / "records" / "rotary.seed1.tar.xz"))

    def test_keeps_the_best_checkpoint_of_the_runs_that_fine_tunes_start_from(self):
        make_run(self.out, "rotary.seed1", extra={"finetune.source": "checkpoint_best.pt starts fine-tunes\n"})
        make_run(self.out, "alibi.seed1")
        done = run("pack", self.out)
        self.assertEqual(done.returncode, 0, done.stderr)
        rotary = members(self.out / "records" / "rotary.seed1.tar.xz")
        self.assertIn("runs/rotary.seed1/checkpoint_best.pt", rotary)
        self.assertIn("runs/rotary.seed1/finetune.source", rotary)  # still marked when packed again elsewhere
        self.assertNotIn("runs/rotary.seed1/checkpoint_last.pt", rotary)
        self.assertNotIn("runs/alibi.seed1/checkpoint_best.pt", members(self.out / "records" / "alibi.seed1.tar.xz"))
        self.assertEqual(done.stderr, "")

    def test_warns_when_a_run_that_fine_tunes_start_from_has_no_checkpoint(self):
        run_dir = make_run(self.out, "rotary.seed1", extra={"finetune.source": "checkpoint_best.pt starts fine-tunes\n"})
        (run_dir / "checkpoint_best.pt").unlink()
        done = run("pack", self.out)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stderr, f"run_records: warning: {run_dir}/finetune.source: fine-tunes start from this "
                                      "run, and it has no checkpoint_best.pt to keep\n")
        self.assertIn("runs/rotary.seed1/finetune.source", members(self.out / "records" / "rotary.seed1.tar.xz"))

    def test_unpacks_into_a_new_directory_and_keeps_finished_runs(self):
        make_run(self.out, "alibi.seed1")
        self.assertEqual(run("pack", self.out, self.root / "records").returncode, 0)
        fresh = self.root / "fresh"
        done = run("unpack", fresh, self.root / "records")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("1 runs unpacked", done.stdout)
        self.assertEqual((fresh / "runs" / "alibi.seed1" / "eval.test.ctx512.json").read_text(), '{"perplexity": 2.9}\n')
        self.assertEqual((fresh / "runs" / "alibi.seed1.log").read_text(), "log of alibi.seed1\n")
        self.assertTrue((fresh / "runs" / "alibi.seed1" / "ablation.done").exists())
        (fresh / "runs" / "alibi.seed1" / "note").write_text("kept")
        again = run("unpack", fresh, self.root / "records")
        self.assertIn("0 runs unpacked", again.stdout)
        self.assertIn("1 there finished already", again.stdout)
        self.assertEqual((fresh / "runs" / "alibi.seed1" / "note").read_text(), "kept")

    def test_replaces_an_unfinished_run_moving_it_aside(self):
        make_run(self.out, "alibi.seed1")
        self.assertEqual(run("pack", self.out, self.root / "records").returncode, 0)
        other = self.root / "other"
        make_run(other, "alibi.seed1", finished=False, extra={"partial": "half-trained"})
        done = run("unpack", other, self.root / "records")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertFalse((other / "runs" / "alibi.seed1" / "partial").exists())
        self.assertTrue((other / "runs" / "alibi.seed1" / "ablation.done").exists())
        self.assertLockNamesTheUnpack(other)
        aside = [p for p in (other / "runs").iterdir() if p.name.startswith("alibi.seed1.old-")]
        self.assertEqual(sorted(p.suffix == ".log" for p in aside), [False, True], aside)
        folder = next(p for p in aside if p.is_dir())
        self.assertEqual((folder / "partial").read_text(), "half-trained")
        self.assertEqual((folder / "checkpoint_last.pt").read_bytes(), b"weights")

    def test_refuses_a_run_that_a_live_process_holds(self):
        make_run(self.out, "alibi.seed1")
        self.assertEqual(run("pack", self.out, self.root / "records").returncode, 0)
        other = self.root / "other"
        busy = make_run(other, "alibi.seed1", finished=False, extra={"partial": "training"})
        with open(busy / ".lock") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            refused = run("unpack", other, self.root / "records")
        self.assertEqual(refused.returncode, 1)
        self.assertIn(f"{busy}: a running process holds it", refused.stderr)
        self.assertTrue((busy / "partial").exists())

    def test_refuses_a_directory_that_an_ablate_holds(self):
        make_run(self.out, "alibi.seed1")
        self.assertEqual(run("pack", self.out, self.root / "records").returncode, 0)
        other = self.root / "other"
        other.mkdir()
        with open(other / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            refused = run("unpack", other, self.root / "records")
        self.assertEqual(refused.returncode, 1)
        self.assertEqual(refused.stderr, f"run_records: {other}: an ablate is running on it "
                                         "(stop it, then unpack again)\n")
        self.assertFalse((other / "runs" / "alibi.seed1").exists())
        unpacked = run("unpack", other, self.root / "records")  # the ablate gone
        self.assertEqual(unpacked.returncode, 0, unpacked.stderr)
        self.assertTrue((other / "runs" / "alibi.seed1" / "ablation.done").exists())
        self.assertLockNamesTheUnpack(other)

    def test_refuses_archives_with_other_files_or_no_finished_run(self):
        records = self.root / "records"
        records.mkdir()
        stray = self.root / "stray"
        make_run(stray, "x.seed1")
        (stray / "outside").write_text("not a run's file")
        with tarfile.open(records / "x.seed1.tar.xz", "w:xz") as tar:
            tar.add(stray / "runs" / "x.seed1" / "config.yaml", "runs/x.seed1/config.yaml")
            tar.add(stray / "outside", "outside")
        refused = run("unpack", self.root / "fresh", records)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("x.seed1.tar.xz: holds files outside runs/x.seed1", refused.stderr)
        self.assertFalse((self.root / "fresh" / "outside").exists())
        with tarfile.open(records / "x.seed1.tar.xz", "w:xz") as tar:
            tar.add(stray / "runs" / "x.seed1" / "config.yaml", "runs/x.seed1/config.yaml")
        refused = run("unpack", self.root / "fresh", records)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("holds no finished run", refused.stderr)

    def test_compares_run_names_literally_and_refuses_paths_that_climb_out(self):
        # "." in a run name is a character, not a pattern: runs/xXseed1 is another run's folder;
        # a member with ".." leaves its run however it starts.
        records = self.root / "records"
        records.mkdir()
        stray = self.root / "stray"
        make_run(stray, "x.seed1")
        for member, line, written in (
                ("runs/xXseed1/config.yaml", "holds files outside runs/x.seed1 (runs/xXseed1/config.yaml)",
                 self.root / "fresh" / "runs" / "xXseed1"),
                ("runs/x.seed1/../../escape", "holds a path that leaves its run (runs/x.seed1/../../escape)",
                 self.root / "escape")):
            with tarfile.open(records / "x.seed1.tar.xz", "w:xz") as tar:
                tar.add(stray / "runs" / "x.seed1" / "ablation.done", "runs/x.seed1/ablation.done")
                tar.add(stray / "runs" / "x.seed1" / "config.yaml", member)
            refused = run("unpack", self.root / "fresh", records)
            self.assertEqual(refused.returncode, 1, member)
            self.assertIn(line, refused.stderr)
            self.assertFalse(written.exists(), member)

    def test_a_failed_tar_leaves_no_partial_archive(self):
        make_run(self.out, "alibi.seed1")
        stub = self.root / "bin"
        stub.mkdir()
        # A tar that writes part of its archive, then fails (a full disk, a vanished file).
        (stub / "tar").write_text('#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = -cJf ] && echo part > "$2"; shift; done\n'
                                  'exit 2\n')
        (stub / "tar").chmod(0o755)
        scratch = self.root / "scratch"
        scratch.mkdir()
        failed = run("pack", self.out, env={"PATH": f"{stub}:{os.environ['PATH']}", "TMPDIR": str(scratch)})
        self.assertEqual(failed.returncode, 1)
        self.assertIn("alibi.seed1.tar.xz: tar failed", failed.stderr)
        self.assertEqual(list((self.out / "records").iterdir()), [])
        self.assertEqual(list(scratch.iterdir()), [])  # the member list is gone too

    def test_an_unpack_that_stops_part_way_leaves_no_finished_looking_run(self):
        make_run(self.out, "alibi.seed1")
        self.assertEqual(run("pack", self.out, self.root / "records").returncode, 0)
        stub = self.root / "bin"
        stub.mkdir()
        # A tar that lists as tar does but, unpacking, writes ablation.done alone and fails
        # (a full disk, a kill after the archive's first member).
        real = subprocess.run(["sh", "-c", "command -v tar"], capture_output=True, text=True).stdout.strip()
        (stub / "tar").write_text('#!/bin/sh\ncase " $* " in *" -xJf "*)\n'
                                  '  mkdir -p "$2/runs/alibi.seed1" && : > "$2/runs/alibi.seed1/ablation.done"; exit 2;;\n'
                                  f'esac\nexec {real} "$@"\n')
        (stub / "tar").chmod(0o755)
        fresh = self.root / "fresh"
        failed = run("unpack", fresh, self.root / "records", env={"PATH": f"{stub}:{os.environ['PATH']}"})
        self.assertEqual(failed.returncode, 1)
        self.assertIn("alibi.seed1.tar.xz: cannot unpack (nothing of it put in", failed.stderr)
        self.assertEqual(len(failed.stderr.strip().splitlines()), 1, failed.stderr)
        # no folder left to unpack into (the lock file stays, as an ablate's does)
        self.assertEqual(sorted(p.name for p in fresh.iterdir()), [".lock", "runs"])
        self.assertEqual(list((fresh / "runs").iterdir()), [])
        done = run("unpack", fresh, self.root / "records")  # the real tar: the run, whole
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual((fresh / "runs" / "alibi.seed1" / "eval.test.ctx512.json").read_text(), '{"perplexity": 2.9}\n')
        self.assertEqual((fresh / "runs" / "alibi.seed1.log").read_text(), "log of alibi.seed1\n")
        self.assertEqual(sorted(p.name for p in fresh.iterdir()), [".lock", "runs"])

    def test_a_trained_run_travels_with_its_best_checkpoint_until_its_finished_record_replaces_it(self):
        make_run(self.out, "rotary.seed1", finished=False, extra={"trained": ""})
        make_run(self.out, "alibi.seed1", finished=False)  # training: not a record of either kind
        make_run(self.out, "fire.seed1")  # finished: `pack`'s
        records = self.out / "records"
        packed = run("pack-trained", self.out)
        self.assertEqual(packed.returncode, 0, packed.stderr)
        self.assertEqual(sorted(p.name for p in records.iterdir()), ["rotary.seed1.trained.tar.xz"])
        self.assertEqual(members(records / "rotary.seed1.trained.tar.xz"),
                         ["runs/rotary.seed1.log", "runs/rotary.seed1/checkpoint_best.pt",
                          "runs/rotary.seed1/config.yaml", "runs/rotary.seed1/eval.test.ctx512.json",
                          "runs/rotary.seed1/trained"])
        self.assertIn("0 runs packed", run("pack-trained", self.out).stdout)
        # an evaluation run since: the record is packed again with it (and still its checkpoint)
        archive = records / "rotary.seed1.trained.tar.xz"
        os.utime(archive, (archive.stat().st_mtime - 10,) * 2)
        (self.out / "runs" / "rotary.seed1" / "eval.test.ctx1024.json").write_text('{"perplexity": 3.1}\n')
        again = run("pack-trained", self.out)
        self.assertIn("1 runs packed", again.stdout, again.stderr)
        self.assertEqual(members(archive),
                         ["runs/rotary.seed1.log", "runs/rotary.seed1/checkpoint_best.pt",
                          "runs/rotary.seed1/config.yaml", "runs/rotary.seed1/eval.test.ctx1024.json",
                          "runs/rotary.seed1/eval.test.ctx512.json", "runs/rotary.seed1/trained"])
        self.assertIn("0 runs packed", run("pack-trained", self.out).stdout)
        # elsewhere: the run as trained, with the checkpoint its evaluations read
        elsewhere = self.root / "elsewhere"
        unpacked = run("unpack", elsewhere, records)
        self.assertEqual(unpacked.returncode, 0, unpacked.stderr)
        self.assertEqual((elsewhere / "runs" / "rotary.seed1" / "checkpoint_best.pt").read_bytes(), b"weights")
        self.assertTrue((elsewhere / "runs" / "rotary.seed1" / "trained").exists())
        self.assertFalse((elsewhere / "runs" / "rotary.seed1" / "ablation.done").exists())
        self.assertIn("0 runs unpacked", run("unpack", elsewhere, records).stdout)  # kept as it is
        # evaluated there and packed finished: its trained record goes, and the finished one is unpacked
        (elsewhere / "runs" / "rotary.seed1" / "ablation.done").write_text("")
        finished = run("pack", elsewhere, records)
        self.assertEqual(finished.returncode, 0, finished.stderr)
        self.assertEqual(sorted(p.name for p in records.iterdir()), ["rotary.seed1.tar.xz"])
        again = run("unpack", self.out, records)  # the local run, trained only, set aside for the finished one
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertTrue((self.out / "runs" / "rotary.seed1" / "ablation.done").exists())
        self.assertTrue(any(p.name.startswith("rotary.seed1.old-") for p in (self.out / "runs").iterdir()))

    def test_a_report_written_while_tar_runs_is_packed_the_next_time(self):
        make_run(self.out, "rotary.seed1", finished=False, extra={"trained": ""})
        stub = self.root / "bin"
        stub.mkdir()
        real_tar = subprocess.run(["sh", "-c", "command -v tar"], capture_output=True, text=True).stdout.strip()
        report = self.out / "runs" / "rotary.seed1" / "eval.test.ctx2048.json"
        # a tar during which an evaluation writes its report (after the files were listed)
        (stub / "tar").write_text(f'#!/bin/sh\n"{real_tar}" "$@" || exit $?\n'
                                  f'[ -e "{report}" ] || echo "{{}}" > "{report}"\n')
        (stub / "tar").chmod(0o755)
        first = run("pack-trained", self.out, env={"PATH": f"{stub}:{os.environ['PATH']}"})
        self.assertEqual(first.returncode, 0, first.stderr)
        archive = self.out / "records" / "rotary.seed1.trained.tar.xz"
        self.assertNotIn("runs/rotary.seed1/eval.test.ctx2048.json", members(archive))
        again = run("pack-trained", self.out)
        self.assertIn("1 runs packed", again.stdout, again.stderr)
        self.assertIn("runs/rotary.seed1/eval.test.ctx2048.json", members(archive))

    def test_a_trained_run_without_its_checkpoint_is_refused(self):
        run_dir = make_run(self.out, "rotary.seed1", finished=False, extra={"trained": ""})
        (run_dir / "checkpoint_best.pt").unlink()
        refused = run("pack-trained", self.out)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("rotary.seed1/checkpoint_best.pt: a trained run's record needs its checkpoint", refused.stderr)
        self.assertEqual(len(refused.stderr.strip().splitlines()), 1, refused.stderr)

    def test_bad_arguments_fail_with_one_line(self):
        for args, message in ((["frob", self.out], "unknown action 'frob'"),
                              (["pack", self.root / "none"], "runs: no such folder"),
                              (["unpack", self.out, self.root / "none"], "none: no such folder"),
                              (["pack"], "usage:")):
            result = run(*args)
            self.assertEqual(result.returncode, 1, args)
            self.assertIn(message, result.stderr)
            self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)


if __name__ == "__main__":
    unittest.main()
