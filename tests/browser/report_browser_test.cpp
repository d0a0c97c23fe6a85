// The HTML report opened in a real browser: headless Chromium (Debian's `chromium`) renders the
// fixture sweep's report without console errors, takes a screenshot, and its DOM holds the
// script-named configuration as text, never as a script element. Without Chromium the test
// fails and says how to install it (scripts/setup.sh does).
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "report/html_report.h"
#include "unit/report_html_check.h"
#include "unit/report_html_fixture.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

std::string find_chromium() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    for (const char* name : {"chromium", "chromium-browser"}) {
      const fs::path p = fs::path(dir) / name;
      if (!dir.empty() && fs::exists(p)) return p.string();
    }
  }
  return "";
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs a shell command; returns its exit status.
int run(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

struct Chromium {
  std::string exe;
  fs::path dir;  ///< where the page, the screenshot and the log go (kept for a look afterwards)

  // Headless Chromium on `page`, with its log (stderr) in `log`; extra flags add the action.
  int open(const fs::path& page, const std::string& action, const fs::path& log,
           const fs::path& stdout_file = "/dev/null") const {
    const std::string cmd = "timeout 180 '" + exe +
                            "' --headless --disable-gpu --no-sandbox --enable-logging=stderr --v=0 "
                            "--no-first-run --user-data-dir='" +
                            (dir / ("profile-" + page.stem().string())).string() + "' " + action +
                            " 'file://" + page.string() + "' >'" + stdout_file.string() + "' 2>'" +
                            log.string() + "'";
    return run(cmd);
  }
};

Chromium chromium_or_fail() {
  const std::string exe = find_chromium();
  if (exe.empty()) {
    FAIL(
        "chromium is not installed, so the report cannot be opened in a browser. scripts/setup.sh "
        "installs it (Debian package `chromium`); or run `sudo apt-get install -y chromium`.");
  }
  const fs::path dir = fs::path(ORCH_BROWSER_OUT_DIR);
  fs::create_directories(dir);
  return {exe, dir};
}

// Lines of Chromium's log that report a page error: console messages and uncaught exceptions.
std::string console_errors(const std::string& log) {
  std::istringstream lines(log);
  std::string line, out;
  while (std::getline(lines, line)) {
    if (line.find("CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos ||
        line.find("Refused to") != std::string::npos ||
        line.find("net::ERR_") != std::string::npos) {
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the report renders in headless Chromium without console errors", "[browser]") {
  const Chromium chrome = chromium_or_fail();
  orch::test::ReportFixture f;
  const std::string html = orch::html_report(f.store, f.sweep());
  const fs::path page = chrome.dir / "report.html", shot = chrome.dir / "report.png",
                 log = chrome.dir / "chromium.log";
  std::ofstream(page, std::ios::binary) << html;
  fs::remove(shot);

  const int rc =
      chrome.open(page, "--screenshot='" + shot.string() + "' --window-size=1400,3000", log);
  INFO("chromium log:\n" << read(log));
  REQUIRE(rc == 0);
  CHECK(console_errors(read(log)) == "");

  // The screenshot: a PNG of the window's size, and not a blank page (a blank 1400x3000 PNG
  // compresses to a few kilobytes; the report with its charts is far larger).
  REQUIRE(fs::exists(shot));
  const std::string png = read(shot);
  REQUIRE(png.size() > 24);
  CHECK(png.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](std::size_t at) {
    return (unsigned(static_cast<unsigned char>(png[at])) << 24) |
           (unsigned(static_cast<unsigned char>(png[at + 1])) << 16) |
           (unsigned(static_cast<unsigned char>(png[at + 2])) << 8) |
           unsigned(static_cast<unsigned char>(png[at + 3]));
  };
  CHECK(be32(16) == 1400);
  CHECK(be32(20) == 3000);
  CHECK(png.size() > 60 * 1024);
}

TEST_CASE("in Chromium's DOM the script-named configuration is text, not a script", "[browser]") {
  const Chromium chrome = chromium_or_fail();
  orch::test::ReportFixture f;
  const std::string html = orch::html_report(f.store, f.sweep());
  const fs::path page = chrome.dir / "report-dom.html", dom = chrome.dir / "report-dom.txt",
                 log = chrome.dir / "chromium-dom.log";
  std::ofstream(page, std::ios::binary) << html;
  const int rc = chrome.open(page, "--dump-dom", log, dom);
  INFO("chromium log:\n" << read(log));
  REQUIRE(rc == 0);
  CHECK(console_errors(read(log)) == "");
  const std::string text = read(dom);
  REQUIRE(text.find("</html>") != std::string::npos);
  CHECK(text.find("<script") == std::string::npos);
  CHECK(text.find("<img") == std::string::npos);
  CHECK_THAT(text, Contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
  // Every chart survived parsing: as many <svg> elements as the page was written with.
  CHECK(orch::test::svg_blocks(text).size() == orch::test::svg_blocks(html).size());
}

TEST_CASE("the console check catches a page error", "[browser]") {
  // The check above would pass vacuously if Chromium logged nothing; a page that throws must
  // show up.
  const Chromium chrome = chromium_or_fail();
  const fs::path page = chrome.dir / "broken.html", log = chrome.dir / "chromium-broken.log";
  std::ofstream(page)
      << "<!DOCTYPE html><html><body><script>undefined_function();</script></body></html>";
  REQUIRE(chrome.open(page, "--dump-dom", log) == 0);
  CHECK(console_errors(read(log)) != "");
}
