#!/usr/bin/env python3
"""tests/docs/check_docs.py on a small repository made here: each check finds what it is for
(a missing file, a missing heading, a stale version, a README figure the benchmark tables do
not hold) and passes what is right. Python 3 standard library only."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_docs  # noqa: E402

BENCHMARKS = textwrap.dedent("""\
    # Benchmarks

    ## Eager

    | configuration | img/s |
    |---|---|
    | bf16 | 5,029.8 |

    ## Graphs

    | configuration | img/s |
    |---|---|
    | bf16 | 7,327.1 |
""")

CODE = {
    "storage/store.h": "constexpr int kSchemaVersion = 10;\n",
    "orchestrator/include/orch/plugin.h": "#define ORCH_SDK_VERSION 5\n",
    "orchestrator/src/result/result_document.h": "constexpr std::int64_t kResultVersion = 2;\n",
}

DOCS = textwrap.dedent("""\
    # Database

    * **Schema version 10** (`PRAGMA user_version`), refused when newer than `kSchemaVersion` (10).
    * The plugins: this orch provides SDK version 5; `ORCH_SDK_VERSION` in `orch/plugin.h` (now 5).
    * Each run: a result document (JSON, version 2).

    ## `orch sweep FILE [key=value ...] [options]`

    ## Views

    ## Views
""")


class CheckDocsRepoTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        for rel, text in CODE.items():
            self.write(rel, text)
        self.write("docs/benchmarks.md", BENCHMARKS)
        self.write("docs/db.md", DOCS)
        self.write("README.md", "# orch\n\nSee [the views](docs/db.md#views-1) and `storage/store.h`.\n")

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def check(self):
        done = subprocess.run([sys.executable, os.path.join(HERE, "check_docs.py"), self.root],
                              capture_output=True, text=True)
        return done.returncode, done.stdout

    def test_a_correct_repository_passes(self):
        rc, out = self.check()
        self.assertEqual(rc, 0, out)
        self.assertIn("0 problems", out)

    def test_a_missing_file_a_missing_heading_and_a_missing_path_fail(self):
        self.write("README.md", "[a](docs/gone.md) [b](docs/db.md#tables) [c](#nowhere) "
                   "`storage/gone.h`\n")
        rc, out = self.check()
        self.assertEqual(rc, 1)
        self.assertIn("README.md:1: link to a missing file: docs/gone.md", out)
        self.assertIn("link to a missing heading: docs/db.md#tables", out)
        self.assertIn("link to a missing heading: #nowhere", out)
        self.assertIn("no such file or folder in the repository: storage/gone.h", out)

    def test_a_stated_version_that_differs_from_the_code_fails(self):
        self.write("storage/store.h", "constexpr int kSchemaVersion = 11;\n")
        rc, out = self.check()
        self.assertEqual(rc, 1)
        self.assertIn("docs/db.md:3: the database schema version is 11 (storage/store.h), not 10",
                      out)

    def test_a_version_no_doc_states_any_more_fails(self):
        self.write("docs/db.md", DOCS.replace("(JSON, version 2)", "(JSON)"))
        rc, out = self.check()
        self.assertEqual(rc, 1)
        self.assertIn("no file states the result document's version any more", out)

    def test_readme_figures_must_be_in_the_benchmark_tables(self):
        self.write("README.md", textwrap.dedent("""\
            # orch

            * bf16 eager: 5,030 img/s, 1.07x, at batch 256 on 224x224 images, 100% busy.
            * graphs: 7,327 img/s ([table](docs/benchmarks.md#graphs)).
            * graphs: 5,030 img/s ([table](docs/benchmarks.md#graphs)).
            * eager: 6,000 img/s.

            | rung | img/s |
            |---|---|
            | eager | 4,999 |
            """))
        rc, out = self.check()
        self.assertEqual(rc, 1)
        lines = [line for line in out.splitlines() if "img/s" in line]
        # 5,030 in item 1 is 5,029.8 rounded; in item 3 it is not in the section cited.
        self.assertEqual(len(lines), 4, out)
        self.assertIn("README.md:3: 256 (in a paragraph that says img/s) is not in "
                      "docs/benchmarks.md", out)
        self.assertIn("README.md:5: 5,030 (in a paragraph that says img/s) is not in the "
                      "section(s) #graphs of docs/benchmarks.md", out)
        self.assertIn("README.md:6: 6,000", out)
        self.assertIn("README.md:8: 4,999", out)
        self.assertNotIn("7,327", out)


class SlugTest(unittest.TestCase):
    def test_github_ids(self):
        self.assertEqual(check_docs.slug("`orch sweep FILE [key=value ...] [options]`"),
                         "orch-sweep-file-keyvalue--options")
        self.assertEqual(check_docs.slug("The seed article's ladder (`experiments/article.yaml`, "
                                         "not a suite)"),
                         "the-seed-articles-ladder-experimentsarticleyaml-not-a-suite")
        self.assertEqual(check_docs.slug("`run_metrics`, `run_steps`"), "run_metrics-run_steps")
        self.assertEqual(check_docs.slug("[`imagefolder`](plugins.md#imagefolder) loader"),
                         "imagefolder-loader")

    def test_repeated_headings_are_numbered_and_fences_are_not_headings(self):
        text = "# A\n\n```\n# not a heading\n```\n\n## A\n### B ###\n"
        self.assertEqual(check_docs.headings(text), [(1, "a", 1), (2, "a-1", 7), (3, "b", 8)])


if __name__ == "__main__":
    unittest.main()
