// `walbench plot` and `walbench report --usl` end to end: the binary runs scripts/plot_result.py
// and scripts/usl_fit.py on small hand-made result files. The fit itself is tested on synthetic
// curves in scripts/usl_fit_test.py (ctest usl_fit).
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "harness/python_script.h"
#include "tests/temp_dir.h"

namespace walbench {
namespace {

using nlohmann::json;
using testing::TempDir;
using testing::slurp;

struct Run {
  int rc = -1;
  std::string out, err;
};

Run walbench(const std::string& args, const TempDir& dir) {
  const auto out = dir.path / "stdout.txt", err = dir.path / "stderr.txt";
  const std::string cmd = "cd '" + dir.path.string() + "' && '" + WALBENCH_BINARY + "' " + args +
                          " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

void check_one_line_error(const Run& r, const std::string& needle) {
  INFO("stderr: " << r.err);
  CHECK(r.rc == 2);
  CHECK(r.err.rfind("walbench: error: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(needle) != std::string::npos);
}

bool python_has(const std::string& module) {
  std::string cmd = python_interpreter();  // appended piecewise: GCC 12 warns (-Wrestrict) on "'" + s
  cmd.insert(cmd.begin(), '\'');
  cmd += "' -c 'import " + module + "' 2>/dev/null";
  return std::system(cmd.c_str()) == 0;
}

double usl(double n, double lambda, double sigma, double kappa) {
  return lambda * n / (1 + sigma * (n - 1) + kappa * n * (n - 1));
}

// A result file of two variants x two record sizes x clients 1..256, tps from the USL with
// lambda 1000, sigma 0.05, kappa 0.001 (N* = sqrt(0.95 / 0.001) = 30.8); "fast" has twice the
// lambda. Three repetitions with a CI of the median; one failed cell.
json synthetic_result() {
  json cells = json::array();
  int index = 0;
  for (int size : {16, 8192}) {
    for (const char* label : {"slow", "fast"}) {
      for (int clients = 1; clients <= 256; clients *= 2) {
        const double tps = usl(clients, std::string(label) == "fast" ? 2000 : 1000, 0.05, 0.001);
        json cell = {{"index", index++}, {"label", label}, {"clients", clients},
                     {"matrix", {{"clients", clients}, {"strategy", label}, {"workload.record_size", size}}},
                     {"set", json::object()},
                     {"workload", {{"record_size", size}, {"record_size_label", std::to_string(size)}}},
                     {"ok", true}, {"error", nullptr},
                     {"summary", {{"repetitions", 3}, {"tps_median", tps}, {"tps_min", tps * 0.97},
                                  {"tps_max", tps * 1.02},
                                  {"tps_ci", {{"lo", tps * 0.97}, {"hi", tps * 1.02}, {"level", 0.75}}}}}};
        cells.push_back(cell);
      }
    }
  }
  cells.push_back({{"index", index}, {"label", "slow"}, {"clients", 512},
                   {"matrix", {{"clients", 512}, {"strategy", "slow"}, {"workload.record_size", 16}}},
                   {"set", json::object()}, {"ok", false}, {"error", "verify failed"}, {"summary", nullptr}});
  return {{"context", {{"schema_version", 2}}}, {"cells", cells}};
}

}  // namespace

TEST_CASE("report --usl fits each curve and prints its parameters and peak", "[plot][usl]") {
  if (!python_has("scipy.optimize")) {
    WARN("SKIPPED: " << python_interpreter() << " has no SciPy; install python3-scipy (scripts/setup.sh)");
    return;
  }
  TempDir dir;
  dir.write("r.json", synthetic_result().dump());
  const Run r = walbench("report r.json --usl", dir);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("record_size=16\n") != std::string::npos);
  CHECK(r.out.find("record_size=8192\n") != std::string::npos);
  // Exact USL curves: lambda, sigma, kappa back, N* 31, R^2 1.
  std::istringstream lines(r.out);
  std::string line;
  int slow = 0, fast = 0;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string label, points, lambda, sigma, kappa, peak, r2;
    f >> label >> points >> lambda >> sigma >> kappa >> peak >> r2;
    if (label != "slow" && label != "fast") continue;
    (label == "slow" ? slow : fast)++;
    CHECK(points == "9");
    CHECK(std::stod(lambda) == Approx(label == "slow" ? 1000 : 2000).epsilon(1e-4));
    CHECK(std::stod(sigma) == Approx(0.05).epsilon(1e-3));
    CHECK(std::stod(kappa) == Approx(0.001).epsilon(1e-3));
    CHECK(peak == "31");
    CHECK(r2 == "1.0000");
  }
  CHECK(slow == 2);
  CHECK(fast == 2);
  CHECK(r.out.find("1 cell(s) failed or without a summary") != std::string::npos);
  CHECK(r.out.find("nan") == std::string::npos);
}

TEST_CASE("report --usl on a curve of too few points says why instead of a number", "[plot][usl]") {
  if (!python_has("scipy.optimize")) {
    WARN("SKIPPED: " << python_interpreter() << " has no SciPy; install python3-scipy (scripts/setup.sh)");
    return;
  }
  TempDir dir;
  json doc = synthetic_result();
  json& cells = doc["cells"];
  cells.erase(std::remove_if(cells.begin(), cells.end(),
                             [](const json& c) { return c["label"] == "fast" && c["clients"].get<int>() > 2; }),
              cells.end());
  dir.write("r.json", doc.dump());
  const Run r = walbench("report r.json --usl", dir);
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK(r.out.find("no fit: 2 client counts; the fit needs 3 or more") != std::string::npos);
}

TEST_CASE("plot draws a PNG and an SVG, with ratios, a reference overlay and USL fits", "[plot]") {
  if (!python_has("matplotlib") || !python_has("scipy.optimize")) {
    WARN("SKIPPED: " << python_interpreter()
                     << " lacks matplotlib or SciPy; install python3-matplotlib python3-scipy (scripts/setup.sh)");
    return;
  }
  TempDir dir;
  dir.write("r.json", synthetic_result().dump());
  dir.write("ref.csv",
            "variant,clients,record_size,tps\nslow,1,16,900\nslow,8,16,6000\nfast,1,16,1800\nfast,8,16,9000\n");

  const Run png = walbench("plot r.json --usl --reference ref.csv", dir);  // default: r.png
  INFO(png.out << png.err);
  REQUIRE(png.rc == 0);
  const std::string image = slurp(dir.path / "r.png");
  CHECK(image.size() > 10000);
  CHECK(image.rfind("\x89PNG\r\n", 0) == 0);
  CHECK(png.out.find("wrote r.png") != std::string::npos);

  const Run svg = walbench("plot r.json -o out.svg --ratio slow --reference ref.csv", dir);
  INFO(svg.out << svg.err);
  REQUIRE(svg.rc == 0);
  const std::string text = slurp(dir.path / "out.svg");
  CHECK(text.find("<svg") != std::string::npos);
  CHECK(text.find("% of slow") != std::string::npos);  // the y axis of the relative curves
  // No temporary file left beside the images.
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path)) ++files;
  CHECK(files == 6);  // r.json ref.csv r.png out.svg stdout.txt stderr.txt
}

TEST_CASE("plot and report --usl refuse bad input with one line", "[plot]") {
  if (!python_has("matplotlib") || !python_has("scipy.optimize")) {
    WARN("SKIPPED: " << python_interpreter()
                     << " lacks matplotlib or SciPy; install python3-matplotlib python3-scipy (scripts/setup.sh)");
    return;
  }
  TempDir dir;
  dir.write("r.json", synthetic_result().dump());
  dir.write("notes.json", "{\"hello\": 1}");
  dir.write("broken.json", "{\"context\": ");
  dir.write("waits.csv", "variant,workload,clients,wait_event,samples\na,b,1,CPU,3\n");

  check_one_line_error(walbench("plot notes.json", dir), "notes.json: not a walbench result file");
  check_one_line_error(walbench("plot broken.json", dir), "broken.json: not JSON");
  check_one_line_error(walbench("plot missing.json", dir), "missing.json: cannot read");
  check_one_line_error(walbench("plot r.json --ratio medium", dir),
                       "--ratio medium: no variant of that label in r.json (its variants: slow, fast)");
  check_one_line_error(walbench("plot r.json -o r.jpg", dir), "expected a file name ending in .png or .svg");
  check_one_line_error(walbench("plot r.json --ratio slow --usl", dir), "does not combine with --ratio");
  check_one_line_error(walbench("plot r.json --reference waits.csv", dir), "a wait-event table");
  check_one_line_error(walbench("plot r.json -o nodir/r.png", dir), "nodir/r.png: cannot write");
  check_one_line_error(walbench("report notes.json --usl", dir), "notes.json: not a walbench result file");
  CHECK(!std::filesystem::exists(dir.path / "notes.png"));
  CHECK(!std::filesystem::exists(dir.path / "r.jpg"));
}

TEST_CASE("walbench --help and plot --help teach plot and report --usl", "[plot]") {
  TempDir dir;
  const Run help = walbench("--help", dir);
  CHECK(help.rc == 0);
  CHECK(help.out.find("  plot ") != std::string::npos);
  CHECK(help.out.find("walbench plot r.json --usl") != std::string::npos);
  CHECK(help.out.find("walbench report r.json --usl") != std::string::npos);
  const Run plot = walbench("plot --help", dir);
  CHECK(plot.rc == 0);
  for (const char* option : {"--output", "--ratio", "--reference", "--usl"}) CHECK(plot.out.find(option) != std::string::npos);
  CHECK(walbench("report --help", dir).out.find("--usl") != std::string::npos);
  check_one_line_error(walbench("plot", dir), "RESULT is required");
}

TEST_CASE("plot's default output sits next to the result", "[plot]") {
  CHECK(default_plot_path("results/a.json") == "results/a.png");
  CHECK(default_plot_path("x/run") == "x/run.png");
}

}  // namespace walbench
