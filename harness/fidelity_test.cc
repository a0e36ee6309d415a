// `walbench compare RESULT --reference REF.csv` on hand-written result files and tables: peak
// distances, winners and published ties where they are known, ratio-error statistics on known
// numbers, fitted points left out of every score, mismatches, the --fix slice, --variant renames,
// the exact text layout (golden), the JSON file, and the one-line errors for bad input.
#include "harness/fidelity.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "tests/temp_dir.h"

#include "harness/config.h"

namespace walbench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

using testing::TempDir;

// A cell as runner.cc writes it, with the fields the comparison reads. tps < 0: a failed cell.
// `matrix` is added to {strategy, clients}.
json cell(const std::string& label, int clients, double tps, json matrix = json::object()) {
  matrix["strategy"] = label;
  matrix["clients"] = clients;
  json c = {
      {"index", 0},
      {"label", label},
      {"strategy", "insert_locks"},
      {"clients", clients},
      {"matrix", matrix},
      {"platform", {{"kind", "sim"}}},
      {"workload", {{"name", "emit_message"}, {"transactional", true}, {"client_overhead_us", 0}}},
      {"wal", {{"storage", "memory"}}},
      {"commit", {{"synchronous_commit", true}}},
      {"run", {{"duration_s", 0.02}, {"repetitions", 1}}},
      {"ok", tps >= 0},
      {"error", tps >= 0 ? json(nullptr) : json("watchdog: no progress for 10.0 s")},
      {"repetitions", json::array()},
      {"summary", tps >= 0 ? json{{"repetitions", 1}, {"tps_median", tps}} : json(nullptr)},
  };
  if (matrix.contains("workload.record_size")) {
    c["workload"]["record_size"] = matrix["workload.record_size"];
    c["workload"]["record_size_label"] = matrix["workload.record_size"].dump();
  }
  return c;
}

json sized(const std::string& label, int clients, double tps, int record_size) {
  return cell(label, clients, tps, {{"workload.record_size", record_size}});
}

// `config` is what the runner records as context.config (null: none recorded).
std::string result_file(const json& cells, const json& config = nullptr) {
  json doc = {{"context", {{"schema_version", 1}, {"walbench_version", "0.1.0"}}}, {"cells", cells}};
  if (!config.is_null()) doc["context"]["config"] = config;
  return doc.dump(1);
}

struct Run {
  ojson cmp;
  std::string text;
};

// Loads both files as the command does and compares them.
Run compare(const std::string& result, const std::string& csv, FidelityOptions opts = {}) {
  opts.result_path = result;
  opts.reference_path = csv;
  std::ostringstream out, err;
  REQUIRE(fidelity_command(opts, out, err) == 0);
  CHECK(err.str().empty());
  const ReferenceTable ref = load_reference_csv(csv);
  Run r;
  r.cmp = fidelity_compare(nlohmann::json::parse(std::ifstream(result)), ref, opts);
  r.text = out.str();
  CHECK(r.text == render_fidelity(r.cmp));
  return r;
}

// The message of the UsageError that `f` throws ("" if none).
template <class F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// Two variants over clients 1-8 and two record sizes, where the result reproduces the table:
// "waitlist" peaks at 4 clients for 16 B and at 8 for 1 KiB, "atomic" at 8; atomic wins from 4
// clients on, ties below.
const char* kTable =
    "variant,clients,record_size,tps\n"
    "waitlist,1,16,100\n"
    "waitlist,2,16,190\n"
    "waitlist,4,16,300\n"
    "waitlist,8,16,200\n"
    "atomic,1,16,101\n"
    "atomic,2,16,192\n"
    "atomic,4,16,400\n"
    "atomic,8,16,500\n"
    "waitlist,1,1024,50\n"
    "waitlist,2,1024,90\n"
    "waitlist,4,1024,150\n"
    "waitlist,8,1024,160\n"
    "atomic,1,1024,50\n"
    "atomic,2,1024,91\n"
    "atomic,4,1024,170\n"
    "atomic,8,1024,240\n";

json matching_cells() {
  return json::array({
      sized("waitlist", 1, 1000, 16), sized("waitlist", 2, 2000, 16), sized("waitlist", 4, 3500, 16),
      sized("waitlist", 8, 2500, 16), sized("atomic", 1, 1010, 16), sized("atomic", 2, 1990, 16),
      sized("atomic", 4, 4500, 16), sized("atomic", 8, 6000, 16), sized("waitlist", 1, 600, 1024),
      sized("waitlist", 2, 1000, 1024), sized("waitlist", 4, 1500, 1024), sized("waitlist", 8, 1600, 1024),
      sized("atomic", 1, 600, 1024), sized("atomic", 2, 1020, 1024), sized("atomic", 4, 1900, 1024),
      sized("atomic", 8, 2900, 1024),
  });
}

}  // namespace

TEST_CASE("fidelity: known peaks and winners all match", "[fidelity]") {
  TempDir dir;
  const std::string result = dir.write("r.json", result_file(matching_cells()));
  const std::string csv = dir.write("t.csv", kTable);
  const Run r = compare(result, csv);

  CHECK(r.cmp["variants"] == ojson::array({"waitlist", "atomic"}));
  CHECK(r.cmp["baseline"] == "waitlist");  // the first of exactly two, in CSV order
  REQUIRE(r.cmp["series"].size() == 2);
  const ojson& s16 = r.cmp["series"][0];
  CHECK(s16["name"] == "record_size=16");
  const ojson& waitlist = s16["curves"][0];
  CHECK(waitlist["variant"] == "waitlist");
  CHECK(waitlist["clients"] == ojson::array({1, 2, 4, 8}));
  CHECK(waitlist["peak"]["reference"] == 4);
  CHECK(waitlist["peak"]["result"] == 4);
  CHECK(waitlist["points"][2]["reference_shape"].get<double>() == Approx(3.0));
  CHECK(waitlist["points"][2]["result_shape"].get<double>() == Approx(3.5));
  CHECK(s16["curves"][1]["peak"]["reference"] == 8);
  CHECK(waitlist["peak"]["distance"] == 1.0);
  const ojson& ratios = s16["ratios"][0];
  CHECK(ratios["variant"] == "atomic");
  CHECK(ratios["baseline"] == "waitlist");
  CHECK(ratios["points"][0]["kind"] == "published_tie");  // 1.01: inside the 10% threshold
  CHECK(ratios["points"][0]["reference_winner"] == "tie");
  CHECK(ratios["points"][0]["agree"].is_null());
  CHECK(ratios["points"][3]["kind"] == "scored");
  CHECK(ratios["points"][3]["reference_winner"] == "atomic");
  CHECK(ratios["points"][3]["result_winner"] == "atomic");
  CHECK(ratios["points"][3]["agree"] == true);
  CHECK(ratios["points"][3]["error"].get<double>() == Approx(1 - 2.4 / 2.5));

  // Scored winners: 16 B at 4 (1.33) and 8 (2.5), 1 KiB at 4 (1.13) and 8 (1.5); the 1- and
  // 2-client points of both sizes are published ties, and the result is within 5% there too.
  const ojson& sm = r.cmp["summary"];
  CHECK(sm["fitted_points"] == 0);
  CHECK(sm["peaks"]["scored"] == 4);
  CHECK(sm["peaks"]["within_2x"] == 4);
  CHECK(sm["peaks"]["same_clients"] == 4);
  CHECK(sm["peaks"]["max_distance"] == 1.0);
  CHECK(sm["winners"]["agree"] == 4);
  CHECK(sm["winners"]["scored"] == 4);
  CHECK(sm["published_ties"]["points"] == 4);
  CHECK(sm["published_ties"]["result_tie"] == 4);
  CHECK(sm["ratio_errors"]["points"] == 8);
  CHECK(sm["mismatches"].empty());
  CHECK(sm["targets"]["peaks_within_2x"] ==
        ojson{{"count", 4}, {"of", 4}, {"share", 1.0}, {"target", 0.8}, {"met", true}});
  CHECK(sm["targets"]["winners_agree"]["met"] == true);
  CHECK(sm["targets"]["ratios_within_35_pct"]["of"] == 8);
  CHECK(sm["repetition_spread"]["points"] == 0);  // one repetition per cell
  CHECK(r.cmp["per_repetition"].empty());
  CHECK(r.cmp["fitted"]["source"].is_null());
  CHECK(r.cmp["warnings"].empty());
  CHECK(r.cmp["reference_only"].empty());
  CHECK(r.cmp["result_only"].empty());
  CHECK(r.text.find("winners agree:  4/4 (points where the published ratio is off 1 by more than 10%)\n"
                    "published ties: 4 points within 10%; the result within 5% at 4 (not scored)\n") !=
        std::string::npos);
  CHECK(r.text.find("mismatches: none") != std::string::npos);
}

TEST_CASE("fidelity: a moved peak and a flipped winner are mismatches, not errors", "[fidelity]") {
  TempDir dir;
  json cells = matching_cells();
  cells[1]["summary"]["tps_median"] = 5000;  // waitlist 16 B now peaks at 2 clients, not 4 ...
  cells[7]["summary"]["tps_median"] = 3600;  // atomic still peaks at 8
  cells[6]["summary"]["tps_median"] = 2100;  // atomic at 4 clients now loses to waitlist (3500)
  const std::string result = dir.write("r.json", result_file(cells));
  const std::string csv = dir.write("t.csv", kTable);
  const Run r = compare(result, csv);

  const ojson& s16 = r.cmp["series"][0];
  CHECK(s16["curves"][0]["peak"]["result"] == 2);
  CHECK(s16["curves"][0]["peak"]["steps"] == 1);
  CHECK(s16["curves"][0]["peak"]["distance"] == 2.0);  // 4 and 2 clients: within 2x, not a mismatch
  CHECK(s16["curves"][1]["peak"]["result"] == 8);
  CHECK(s16["curves"][1]["peak"]["distance"] == 1.0);

  // 8x: waitlist 1 KiB peaks at 1 client in the result, 8 in the table.
  cells[8]["summary"]["tps_median"] = 9000;
  const std::string result2 = dir.write("r2.json", result_file(cells));
  const Run r2 = compare(result2, csv);
  const ojson& sm = r2.cmp["summary"];
  CHECK(sm["peaks"]["scored"] == 4);
  CHECK(sm["peaks"]["within_2x"] == 3);
  CHECK(sm["peaks"]["same_clients"] == 2);
  CHECK(sm["peaks"]["median_distance"] == 1.5);  // 1, 1, 2, 8
  CHECK(sm["peaks"]["max_distance"] == 8.0);
  CHECK(sm["winners"]["scored"] == 4);
  CHECK(sm["winners"]["agree"] == 3);  // 16 B at 4 clients flipped
  // 16 B at 2 clients (0.40) and 1 KiB at 1 (0.07) name waitlist where the table is within 10%:
  // published ties, counted apart, not mismatches.
  CHECK(sm["published_ties"]["points"] == 4);
  CHECK(sm["published_ties"]["result_tie"] == 2);
  std::vector<std::string> mismatches = sm["mismatches"].get<std::vector<std::string>>();
  REQUIRE(mismatches.size() == 2);
  CHECK(mismatches[0] ==
        "winner record_size=16 at 4 clients (atomic / waitlist): reference atomic (1.33), result waitlist (0.60)");
  CHECK(mismatches[1] == "peak record_size=1024 waitlist: reference at 8 clients, result at 1 (8.0x apart)");
  CHECK(r2.text.find("mismatches (2): winner disagreements and peaks more than 2x away\n"
                     "  winner record_size=16 at 4 clients") != std::string::npos);
}

// Gives `c` one repetition per entry of `tps` (seed 1, 2, ...) and the summary the runner writes:
// their median, min and max. A negative tps: that repetition failed, and with it the cell (the
// runner stops a cell at its first failed repetition and writes no summary).
json with_repetitions(json c, const std::vector<double>& tps) {
  c["repetitions"] = json::array();
  std::vector<double> ok;
  for (size_t i = 0; i < tps.size(); ++i) {
    c["repetitions"].push_back({{"seed", i + 1}, {"tps", tps[i] >= 0 ? json(tps[i]) : json(nullptr)}, {"ok", tps[i] >= 0}});
    if (tps[i] >= 0) ok.push_back(tps[i]);
  }
  if (ok.size() < tps.size()) {
    c["ok"] = false;
    c["error"] = "repetition 3: watchdog: no progress for 10.0 s";
    c["summary"] = nullptr;
    return c;
  }
  std::sort(ok.begin(), ok.end());
  c["summary"] = {{"repetitions", ok.size()}, {"tps_median", ok[ok.size() / 2]}, {"tps_min", ok.front()},
                  {"tps_max", ok.back()}};
  return c;
}

TEST_CASE("fidelity: the targets are scored on the median and on each repetition alone", "[fidelity]") {
  TempDir dir;
  // Repetition 1 reproduces the table; repetition 2 flips the winner of 16 B at 4 clients;
  // repetition 3 moves the 1 KiB waitlist peak to 1 client (8x). Each cell's median is
  // repetition 1's tps. Waitlist 16 B at 8 clients failed in repetition 3: the cell is failed
  // and left out of every scoring alike.
  json cells = matching_cells();
  for (size_t i = 0; i < cells.size(); ++i) {
    const double base = cells[i]["summary"]["tps_median"].get<double>();
    std::vector<double> tps{base, base, base};
    if (i == 6) tps[1] = 2100;   // atomic 16 B, 4 clients: now loses to waitlist (3500)
    if (i == 8) tps[2] = 9000;   // waitlist 1 KiB, 1 client
    if (i == 3) tps[2] = -1;     // waitlist 16 B, 8 clients
    cells[i] = with_repetitions(cells[i], tps);
  }
  const std::string result = dir.write("r.json", result_file(cells));
  const std::string csv = dir.write("t.csv", kTable);
  const Run r = compare(result, csv);

  const ojson& sm = r.cmp["summary"];
  CHECK(sm["targets"]["peaks_within_2x"]["count"] == 4);  // waitlist 16 B still has 1, 2, 4 clients
  CHECK(sm["targets"]["winners_agree"]["count"] == 3);
  CHECK(sm["targets"]["winners_agree"]["of"] == 3);       // 16 B at 8 clients failed
  const ojson& atomic4 = r.cmp["series"][0]["curves"][1]["points"][2];
  CHECK(atomic4["result_tps_range"] == ojson::array({2100.0, 4500.0}));
  CHECK(atomic4["result_tps_repetitions"] == ojson::array({4500.0, 2100.0, 4500.0}));
  CHECK(sm["repetition_spread"]["points"] == 15);
  CHECK(sm["repetition_spread"]["max"].get<double>() == Approx(9000.0 / 600 - 1));
  CHECK(r.cmp["repetitions_are_seeds"] == true);

  const ojson& per = r.cmp["per_repetition"];
  REQUIRE(per.size() == 3);
  CHECK(per[0]["repetition"] == 1);
  CHECK(per[0]["seeds"] == ojson::array({1}));
  CHECK(per[2]["seeds"] == ojson::array({3}));
  for (const char* k : {"peaks_within_2x", "winners_agree", "ratios_within_35_pct"})
    CHECK(per[0]["targets"][k] == sm["targets"][k]);  // repetition 1 is the median everywhere
  for (const auto& one : per) {
    CHECK(one["failed"] == 1);  // the same failed cell in every scoring
    CHECK(one["targets"]["ratios_within_35_pct"]["of"] == 7);
  }
  CHECK(per[1]["targets"]["winners_agree"]["count"] == 2);
  CHECK(per[1]["targets"]["winners_agree"]["met"] == false);
  CHECK(per[1]["targets"]["ratios_within_35_pct"]["count"].get<size_t>() ==
        per[0]["targets"]["ratios_within_35_pct"]["count"].get<size_t>() - 1);  // 0.60 against 1.33
  CHECK(per[1]["targets"]["peaks_within_2x"]["met"] == true);
  CHECK(per[2]["targets"]["peaks_within_2x"] ==
        ojson{{"count", 3}, {"of", 4}, {"share", 0.75}, {"target", 0.8}, {"met", false}});
  CHECK(per[2]["winners"]["scored"] == 3);
  CHECK(per[1]["mismatches"] == 1);

  CHECK(r.text.find("result tps  result range") != std::string::npos);
  CHECK(r.text.find("4500     2100-4500") != std::string::npos);
  CHECK(r.text.find("repetitions:    3; a point's result tps is their median") != std::string::npos);
  CHECK(r.text.find("each seed scored alone") != std::string::npos);
  CHECK(r.text.find("repetition  seed  peaks within 2x  winners agree  ratio errors <= 35%  failed cells\n") !=
        std::string::npos);
  CHECK(r.text.find("targets met by single seeds: peaks 2 of 3, winners 2 of 3, ratios 3 of 3, all three 1 of 3\n") !=
        std::string::npos);

  // On real threads a repetition is another run, not a seed: no seed column.
  for (auto& c : cells) c["platform"]["kind"] = "threads";
  const std::string threads = dir.write("t.json", result_file(cells));
  const Run t = compare(threads, csv);
  CHECK(t.cmp["repetitions_are_seeds"] == false);
  CHECK(t.text.find("each repetition scored alone (repetition r is the r-th run") != std::string::npos);
  CHECK(t.text.find("repetition  peaks within 2x  winners agree  ratio errors <= 35%  failed cells\n") !=
        std::string::npos);
  CHECK(t.text.find("targets met by single repetitions:") != std::string::npos);
}

TEST_CASE("fidelity: published ties are counted apart from winners", "[fidelity]") {
  TempDir dir;
  // b / a: published 1.03, 1.08, 1.20, 0.80; result 1.00, 1.30, 1.00, 0.70.
  const std::string csv = dir.write("t.csv",
                                    "variant,clients,tps\n"
                                    "a,1,100\na,2,100\na,4,100\na,8,100\n"
                                    "b,1,103\nb,2,108\nb,4,120\nb,8,80\n");
  const std::string result = dir.write(
      "r.json", result_file(json::array({cell("a", 1, 1000), cell("a", 2, 1000), cell("a", 4, 1000),
                                         cell("a", 8, 1000), cell("b", 1, 1000), cell("b", 2, 1300),
                                         cell("b", 4, 1000), cell("b", 8, 700)})));
  FidelityOptions opts;

  SECTION("default: 10% threshold, 5% tie band") {
    const Run r = compare(result, csv, opts);
    const ojson& pts = r.cmp["series"][0]["ratios"][0]["points"];
    // 1.03 and 1.08 are published ties: neither a win nor a loss, whatever the result says.
    CHECK(pts[0]["kind"] == "published_tie");
    CHECK(pts[0]["result_winner"] == "tie");
    CHECK(pts[1]["kind"] == "published_tie");
    CHECK(pts[1]["result_winner"] == "b");
    // 1.20: b won in the table; the result calls a tie, which is not agreement.
    CHECK(pts[2]["kind"] == "scored");
    CHECK(pts[2]["reference_winner"] == "b");
    CHECK(pts[2]["agree"] == false);
    // 0.80: the baseline won; the result's 0.70 picks it too.
    CHECK(pts[3]["reference_winner"] == "a");
    CHECK(pts[3]["agree"] == true);
    const ojson& sm = r.cmp["summary"];
    CHECK(sm["winners"] == ojson{{"agree", 1}, {"scored", 2}});
    CHECK(sm["published_ties"] == ojson{{"points", 2}, {"result_tie", 1}});
    CHECK(r.cmp["series"][0]["score"]["winners_scored"] == 2);
    CHECK(r.text.find("winners agree:  1/2 (points where the published ratio is off 1 by more than 10%)\n"
                      "published ties: 2 points within 10%; the result within 5% at 1 (not scored)\n") !=
          std::string::npos);
    CHECK(r.text.find("1_clients       1.03    1.00   2.9%  tie (within 10%)            tie      -\n") !=
          std::string::npos);
  }
  SECTION("--win-threshold-pct 5 scores 1.08; the result's 1.30 agrees") {
    opts.win_threshold_pct = 5;
    const Run r = compare(result, csv, opts);
    CHECK(r.cmp["series"][0]["ratios"][0]["points"][1]["kind"] == "scored");
    CHECK(r.cmp["summary"]["winners"] == ojson{{"agree", 2}, {"scored", 3}});
    CHECK(r.cmp["summary"]["published_ties"] == ojson{{"points", 1}, {"result_tie", 1}});
    CHECK(r.text.find("than 5% (the result must pick it by more than 5%)") != std::string::npos);
  }
  SECTION("--tie-pct 35 widens the result's tie band: 1.30 and 0.70 name no winner") {
    opts.tie_pct = 35;
    const Run r = compare(result, csv, opts);
    CHECK(r.cmp["summary"]["winners"] == ojson{{"agree", 0}, {"scored", 2}});
    CHECK(r.cmp["summary"]["published_ties"] == ojson{{"points", 2}, {"result_tie", 2}});
  }
  SECTION("a threshold outside [0, 100) is a usage error") {
    opts.win_threshold_pct = 100;
    opts.result_path = result;
    CHECK(usage_error([&] { fidelity_compare(json::parse(std::ifstream(result)), load_reference_csv(csv), opts); }) ==
          "compare: --win-threshold-pct 100: expected a percentage in [0, 100)");
  }
}

// b is 100 tps everywhere on both sides; a's published ratio is 1..5 and its result ratio is off
// by 0, -5%, +20%, +40% and +100%: errors 0, 0.05, 0.2, 0.4, 1.0.
const char* kErrorTable =
    "variant,clients,tps\n"
    "a,1,100\na,2,200\na,3,300\na,4,400\na,5,500\n"
    "b,1,100\nb,2,100\nb,3,100\nb,4,100\nb,5,100\n";

json error_cells(double a_at_1 = 100) {
  return json::array({cell("a", 1, a_at_1), cell("a", 2, 190), cell("a", 3, 360), cell("a", 4, 560), cell("a", 5, 1000),
                      cell("b", 1, 100), cell("b", 2, 100), cell("b", 3, 100), cell("b", 4, 100), cell("b", 5, 100)});
}

TEST_CASE("fidelity: ratio error statistics on known numbers", "[fidelity]") {
  TempDir dir;
  FidelityOptions opts;
  opts.baseline = "b";
  const Run r = compare(dir.write("r.json", result_file(error_cells())), dir.write("t.csv", kErrorTable), opts);
  const ojson& pts = r.cmp["series"][0]["ratios"][0]["points"];
  REQUIRE(pts.size() == 5);
  CHECK(pts[1]["error"].get<double>() == Approx(0.05));
  CHECK(pts[4]["error"].get<double>() == Approx(1.0));
  for (const ojson* e : {&r.cmp["summary"]["ratio_errors"], &r.cmp["series"][0]["score"]["ratio_errors"],
                         &r.cmp["series"][0]["ratios"][0]["ratio_errors"]}) {
    CHECK((*e)["points"] == 5);
    CHECK((*e)["median"].get<double>() == Approx(0.2));
    CHECK((*e)["p90"].get<double>() == Approx(0.76));  // 0.4 + 0.6 x (1.0 - 0.4): rank 3.6 of 0..4
    CHECK((*e)["max"].get<double>() == Approx(1.0));
    CHECK((*e)["under_10_pct"] == 2);
    CHECK((*e)["under_25_pct"] == 3);
    CHECK((*e)["under_50_pct"] == 4);
  }
  CHECK(r.text.find("ratio errors:   5 points; median 20.0%, 90th percentile 76.0%, max 100.0%; under 10%: 2, "
                    "under 25%: 3, under 50%: 4\n") != std::string::npos);
  CHECK(r.cmp["summary"]["winners"] == ojson{{"agree", 4}, {"scored", 4}});
}

TEST_CASE("fidelity: peak distance is a ratio of client counts", "[fidelity]") {
  TempDir dir;
  // a peaks at 64 in the table and 16 in the result (4x); b at 32 and 64 (2x).
  const std::string csv = dir.write("t.csv",
                                    "variant,clients,tps\n"
                                    "a,8,10\na,16,20\na,32,30\na,64,40\na,128,35\n"
                                    "b,8,10\nb,16,20\nb,32,40\nb,64,30\nb,128,20\n");
  const std::string result = dir.write(
      "r.json", result_file(json::array({cell("a", 8, 10), cell("a", 16, 50), cell("a", 32, 40), cell("a", 64, 30),
                                         cell("a", 128, 20), cell("b", 8, 10), cell("b", 16, 20), cell("b", 32, 30),
                                         cell("b", 64, 40), cell("b", 128, 35)})));
  const Run r = compare(result, csv);
  const ojson& a = r.cmp["series"][0]["curves"][0]["peak"];
  CHECK(a["reference"] == 64);
  CHECK(a["result"] == 16);
  CHECK(a["distance"] == 4.0);
  CHECK(a["steps"] == 2);
  CHECK(r.cmp["series"][0]["curves"][1]["peak"]["distance"] == 2.0);
  const ojson& pk = r.cmp["summary"]["peaks"];
  CHECK(pk["median_distance"] == 3.0);
  CHECK(pk["max_distance"] == 4.0);
  CHECK(pk["within_2x"] == 1);
  CHECK(pk["same_clients"] == 0);
  CHECK(r.cmp["summary"]["mismatches"][0] == "peak all rows a: reference at 64 clients, result at 16 (4.0x apart)");
  CHECK(r.text.find("peak distance:  2 of 2 curves scored; median 3.00x, max 4.00x; within 2x: 1/2, same client "
                    "count: 0/2\n") != std::string::npos);
}

TEST_CASE("fidelity: fitted points are shown and not scored", "[fidelity]") {
  TempDir dir;
  const std::string csv = dir.write("t.csv", kErrorTable);
  // a's result at 1 client is 1000x too high: counted, it would move a's result peak to 1 client
  // and add a ratio error of 999.
  const json cells = error_cells(100000);
  const json fitted = json::array({
      {{"clients", 1}, {"reason", "per-transaction cost from the 1-client rows"}},
      {{"variant", "a"}, {"clients", 3}, {"reason", "one more point"}},
      {{"clients", 7}, {"reason", "a client count the table lacks"}},
      {{"tables", "unlogged"}, {"reason", "a column the table lacks"}},
  });
  FidelityOptions opts;
  opts.baseline = "b";

  auto check_scores = [](const Run& r) {
    const ojson& sm = r.cmp["summary"];
    CHECK(sm["fitted_points"] == 3);  // a and b at 1 client, a at 3
    // Errors of the unfitted points 2, 4, 5: 0.05, 0.4, 1.0.
    CHECK(sm["ratio_errors"]["points"] == 3);
    CHECK(sm["ratio_errors"]["median"].get<double>() == Approx(0.4));
    CHECK(sm["ratio_errors"]["max"].get<double>() == Approx(1.0));
    CHECK(sm["winners"] == ojson{{"agree", 3}, {"scored", 3}});
    CHECK(sm["published_ties"]["points"] == 0);  // the 1-client tie is fitted
    const ojson& a = r.cmp["series"][0]["curves"][0];
    CHECK(a["points"][0]["fitted"] == true);
    CHECK(a["points"][1]["fitted"] == false);
    CHECK(a["peak"]["clients"] == ojson::array({2, 4, 5}));
    CHECK(a["peak"]["result"] == 5);
    CHECK(a["peak"]["distance"] == 1.0);
    CHECK(a["peak"]["result_all"] == 1);  // shown for information
    const ojson& p1 = r.cmp["series"][0]["ratios"][0]["points"][0];
    CHECK(p1["kind"] == "fitted");
    CHECK(p1["error"].is_null());
    CHECK(p1["agree"].is_null());
    CHECK(r.cmp["series"][0]["ratios"][0]["points"][2]["kind"] == "fitted");  // b at 3 is not, a is
    CHECK(r.text.find("a_1_clients (fitted)") != std::string::npos);
    CHECK(r.text.find("3_clients (fitted)") != std::string::npos);
    CHECK(r.text.find("fitted entries (4), their points shown and not scored:\n"
                      "  clients=1 (2 compared points): per-transaction cost from the 1-client rows\n"
                      "  clients=3 variant=a (1 compared point): one more point\n") != std::string::npos);
  };

  SECTION("from the result's context.config; an entry that matches no row is a warning") {
    const std::string result = dir.write("r.json", result_file(cells, {{"description", "x"}, {"fitted", fitted}}));
    const Run r = compare(result, csv, opts);
    check_scores(r);
    CHECK(r.cmp["fitted"]["source"] == "the result file's context.config");
    CHECK(r.cmp["fitted"]["entries"][0]["origin"] == result + " /context/config/fitted/0");
    CHECK(r.cmp["warnings"] == ojson::array({
                                   "fitted entry " + result + " /context/config/fitted/2 (clients=7) matches no row of " +
                                       csv,
                                   "fitted entry " + result + " /context/config/fitted/3 (tables=unlogged) matches no "
                                       "row of " + csv + ": it has no column tables",
                               }));
    CHECK(r.text.find("warnings (2):\n  fitted entry ") != std::string::npos);
  }
  SECTION("several configs: the union, each entry once") {
    const json configs = json::array({{{"fitted", json::array({fitted[0], fitted[1]})}},
                                      {{"description", "no fitted list"}},
                                      {{"fitted", json::array({fitted[0], fitted[2], fitted[3]})}}});
    const Run r = compare(dir.write("r.json", result_file(cells, configs)), csv, opts);
    check_scores(r);
    CHECK(r.cmp["fitted"]["entries"].size() == 4);
    CHECK(r.cmp["fitted"]["entries"][1]["origin"].get<std::string>().find("/context/config/0/fitted/1") !=
          std::string::npos);
  }
  SECTION("--fitted-from a config replaces the result's list, with a warning when they differ") {
    opts.fitted_from = dir.write("config.json", json{{"description", "x"}, {"fitted", fitted}}.dump());
    const Run r = compare(dir.write("r.json", result_file(cells)), csv, opts);
    check_scores(r);
    CHECK(r.cmp["fitted"]["source"] == "--fitted-from " + opts.fitted_from);
    CHECK(r.cmp["warnings"].size() == 2);
    const Run r2 = compare(
        dir.write("r2.json", result_file(cells, {{"fitted", json::array({fitted[1]})}})), csv, opts);
    CHECK(r2.cmp["warnings"][0] == "the result file's context.config has its own fitted list (1 entry); "
                                   "--fitted-from " + opts.fitted_from + " replaces it");
  }
  SECTION("a malformed entry names the file and JSON path") {
    opts.result_path = dir.write("r.json", result_file(cells, {{"fitted", json::array({{{"clients", 1}}})}}));
    const ReferenceTable ref = load_reference_csv(csv);
    auto error = [&] { return usage_error([&] { fidelity_compare(json::parse(std::ifstream(opts.result_path)), ref, opts); }); };
    CHECK(error() == opts.result_path +
                         ": /context/config/fitted/0/reason: expected a string saying what was taken from these rows");
    opts.result_path = dir.write("r.json", result_file(cells, {{"fitted", json::array({{{"reason", "r"}, {"clients", json::array({1})}}})}}));
    CHECK(error() == opts.result_path + ": /context/config/fitted/0/clients: expected a string or a number (a value of that column)");
    opts.result_path = dir.write("r.json", result_file(cells, {{"fitted", json::array({{{"reason", "r"}}})}}));
    CHECK(error().find("/context/config/fitted/0: the entry selects no column") != std::string::npos);
  }
}

TEST_CASE("fidelity: text layout (golden)", "[fidelity]") {
  TempDir dir;
  const json cells = json::array({
      sized("a", 1, 1000, 16), sized("a", 2, 2000, 16), sized("a", 4, 1500, 16), sized("a", 8, 1000, 16),
      sized("b", 1, 1000, 16), sized("b", 2, 1840, 16), sized("b", 4, 3100, 16), sized("b", 8, 3000, 16),
      sized("b", 16, -1, 16), sized("c", 1, 5, 16),
  });
  const json config = {{"fitted", json::array({{{"clients", 1}, {"reason", "client_overhead_us from the 1-client rows"}}})}};
  const std::string result = dir.write("r.json", result_file(cells, config));
  const std::string csv = dir.write("t.csv",
                                    "variant,clients,record_size,tps\n"
                                    "a,1,16,100\na,2,16,180\na,4,16,150\na,8,16,120\na,16,16,100\n"
                                    "b,1,16,100\nb,2,16,190\nb,4,16,300\nb,8,16,320\nb,16,16,310\n");
  const Run r = compare(result, csv);
  CHECK(r.text ==
        "compare: RESULT " + result + " vs REFERENCE " + csv + "\n"
        "result: workload emit_message (synchronous_commit=on), storage memory, platform sim, "
        "1 repetition x 0.02 s, median tps\n"
        "scored: how far each curve's peak is from the published one (a ratio of client counts), the ratio "
        "error |result ratio / published ratio - 1| at every point, and the winner where the published "
        "ratio is off 1 by more than 10% (the result must pick it by more than 5%); tps and shapes are "
        "shown, not scored\n"
        "fitted: 2 compared points marked (fitted), shown and not scored (list from the result file's "
        "context.config)\n"
        "\n"
        "record_size=16\n"
        "                      reference tps  result tps  reference shape  result shape\n"
        "a_1_clients (fitted)            100        1000             1.00          1.00\n"
        "a_2_clients                     180        2000             1.80          2.00\n"
        "a_4_clients                     150        1500             1.50          1.50\n"
        "a_8_clients                     120        1000             1.20          1.00\n"
        "b_1_clients (fitted)            100        1000             1.00          1.00\n"
        "b_2_clients                     190        1840             1.90          1.84\n"
        "b_4_clients                     300        3100             3.00          3.10\n"
        "b_8_clients                     320        3000             3.20          3.00\n"
        "shape: tps / tps of the same variant at 1 client\n"
        "\n"
        "peak clients  reference  result  distance  steps  reference (all)  result (all)\n"
        "a                     2       2     1.00x      0                2             2\n"
        "b                     8       4     2.00x      1                8             4\n"
        "unfitted client counts both have: 2 4 8\n"
        "distance: the larger peak client count over the smaller; steps: positions apart on those client "
        "counts; (all): the peak over every client count of that side alone; n/a: fewer than 3 unfitted "
        "common client counts\n"
        "\n"
        "ratio b / a\n"
        "                    reference  result  error  published winner  result winner  agree\n"
        "1_clients (fitted)       1.00    1.00      -            fitted            tie      -\n"
        "2_clients                1.06    0.92  12.8%  tie (within 10%)              a      -\n"
        "4_clients                2.00    2.07   3.3%                 b              b    yes\n"
        "8_clients                2.67    3.00  12.5%                 b              b    yes\n"
        "ratio errors: 3 points; median 12.5%, 90th percentile 12.8%, max 12.8%; under 10%: 1, under 25%: 3, "
        "under 50%: 3\n"
        "winners agree: 2/2; published ties: 1, the result within 5% at 0\n"
        "\n"
        "summary\n"
        "peak distance:  2 of 2 curves scored; median 1.50x, max 2.00x; within 2x: 2/2, same client count: 1/2\n"
        "winners agree:  2/2 (points where the published ratio is off 1 by more than 10%)\n"
        "published ties: 1 point within 10%; the result within 5% at 0 (not scored)\n"
        "ratio errors:   3 points; median 12.5%, 90th percentile 12.8%, max 12.8%; under 10%: 1, under 25%: 3, "
        "under 50%: 3\n"
        "targets:        peaks within 2x 2/2 = 100% (target 80%: met); winners agree 2/2 = 100% (target 80%: met); "
        "ratio errors <= 35% 3/3 = 100% (target 70%: met)\n"
        "\n"
        "by series       peak distances  winners agree  published ties (result tie)  ratio errors  median    p90    "
        "max  <10%  <25%  <50%\n"
        "record_size=16     1.00x 2.00x            2/2                        1 (0)             3   12.5%  12.8%  "
        "12.8%     1     3     3\n"
        "\n"
        "fitted entries (1), their points shown and not scored:\n"
        "  clients=1 (2 compared points): client_overhead_us from the 1-client rows\n"
        "mismatches: none (no winner disagreement, no peak more than 2x away)\n"
        "reference points without a result cell (1):\n"
        "  a record_size=16: clients 16\n"
        "result cells without a reference point (1):\n"
        "  c record_size=16: clients 1 (not a variant of the reference; rename with --variant c=NAME)\n"
        "failed result cells, not compared (1):\n"
        "  b record_size=16, 16 clients: watchdog: no progress for 10.0 s\n");
}

TEST_CASE("fidelity: --fix compares one slice of the table", "[fidelity]") {
  TempDir dir;
  // xloginsert-scale-32core.csv's layout: a `tables` column the result's matrix does not have.
  const std::string csv = dir.write("x.csv",
                                    "variant,tables,clients,tps\n"
                                    "single_lock,permanent,1,631.9\n"
                                    "patch,permanent,1,611.4\n"
                                    "single_lock,permanent,8,4573.7\n"
                                    "patch,permanent,8,4576.2\n"
                                    "single_lock,permanent,32,10684.9\n"
                                    "patch,permanent,32,14168.4\n"
                                    "single_lock,unlogged,1,681.8\n"
                                    "patch,unlogged,1,665.1\n"
                                    "single_lock,unlogged,32,18736.3\n"
                                    "patch,unlogged,32,18888.6\n");
  const std::string result = dir.write(
      "r.json", result_file(json::array({cell("single_lock", 1, 400), cell("single_lock", 8, 3000),
                                         cell("single_lock", 32, 5000), cell("xloginsert_patch", 1, 390),
                                         cell("xloginsert_patch", 8, 3000), cell("xloginsert_patch", 32, 7000)})));
  FidelityOptions opts;
  opts.renames = {"xloginsert_patch=patch"};

  SECTION("without --fix: an error naming the column and its values") {
    opts.result_path = result;
    opts.reference_path = csv;
    const std::string msg = usage_error([&] {
      std::ostringstream out, err;
      fidelity_command(opts, out, err);
    });
    CHECK(msg == csv + ": column \"tables\" is not a matrix key of " + result +
                     " (its keys: none besides strategy and clients); compare one slice with --fix "
                     "tables=VALUE (values: permanent, unlogged)");
  }
  SECTION("--fix tables=permanent") {
    opts.fixes = {"tables=permanent"};
    const Run r = compare(result, csv, opts);
    REQUIRE(r.cmp["series"].size() == 1);
    CHECK(r.cmp["series"][0]["name"] == "tables=permanent");
    CHECK(r.cmp["variants"] == ojson::array({"single_lock", "patch"}));
    CHECK(r.cmp["series"][0]["curves"][1]["result_label"] == "xloginsert_patch");
    CHECK(r.cmp["series"][0]["curves"][1]["points"][2]["reference_tps"].get<double>() == Approx(14168.4));
    CHECK(r.cmp["reference_only"].empty());  // the unlogged rows are outside the slice
    CHECK(r.cmp["result_only"].empty());
    CHECK(r.cmp["summary"]["peaks"]["same_clients"] == 2);
    // 1 and 8 clients: published ties (0.97, 1.00); 32: patch in both (1.33 / 1.40).
    CHECK(r.cmp["summary"]["winners"] == ojson{{"agree", 1}, {"scored", 1}});
    CHECK(r.cmp["summary"]["published_ties"] == ojson{{"points", 2}, {"result_tie", 2}});
    CHECK(r.text.find("variants: xloginsert_patch as patch\nslice: tables=permanent\n") != std::string::npos);
  }
  SECTION("--fix with a value the table lacks") {
    opts.fixes = {"tables=temp"};
    opts.result_path = result;
    const ReferenceTable ref = load_reference_csv(csv);
    CHECK(usage_error([&] { fidelity_compare(json::parse(std::ifstream(result)), ref, opts); }) ==
          "compare: --fix tables=temp: no row of " + csv + " has tables=temp (its values: permanent, unlogged)");
  }
  SECTION("--fix on a name that is neither a column nor a matrix key") {
    opts.fixes = {"shared_buffers=8GB"};
    opts.result_path = result;
    const ReferenceTable ref = load_reference_csv(csv);
    CHECK(usage_error([&] { fidelity_compare(json::parse(std::ifstream(result)), ref, opts); })
              .find("\"shared_buffers\" is neither a column of") != std::string::npos);
  }
}

TEST_CASE("fidelity: --fix on a column both sides have keeps one series", "[fidelity]") {
  TempDir dir;
  FidelityOptions opts;
  opts.fixes = {"record_size=1024.0"};  // numbers compare as numbers
  const Run r = compare(dir.write("r.json", result_file(matching_cells())), dir.write("t.csv", kTable), opts);
  REQUIRE(r.cmp["series"].size() == 1);
  CHECK(r.cmp["series"][0]["name"] == "record_size=1024");
  CHECK(r.cmp["left_out_by_fix"] == 8);
  CHECK(r.cmp["summary"]["peaks"]["within_2x"] == 2);
  CHECK(r.cmp["reference_only"].empty());
  CHECK(r.cmp["result_only"].empty());
}

TEST_CASE("fidelity: --fix on a matrix key the table lacks, --baseline, --win-threshold-pct", "[fidelity]") {
  TempDir dir;
  json cells = json::array();
  for (int buffers : {64, 512})
    for (int clients : {1, 2, 4})
      for (const char* label : {"a", "b", "c"})
        cells.push_back(cell(label, clients, 100.0 * clients * (label[0] - 'a' + 1) * (buffers == 64 ? 1 : 2),
                             {{"wal.wal_buffers", buffers}}));
  const std::string result = dir.write("r.json", result_file(cells));
  const std::string csv = dir.write("t.csv",
                                    "variant,clients,tps\n"
                                    "a,1,10\na,2,20\na,4,40\nb,1,20\nb,2,40\nb,4,80\nc,1,10.4\nc,2,20.8\nc,4,41\n");
  FidelityOptions opts;
  opts.result_path = result;
  const ReferenceTable ref = load_reference_csv(csv);
  const json doc = json::parse(std::ifstream(result));

  CHECK(usage_error([&] { fidelity_compare(doc, ref, opts); }) ==
        result + ": matrix key wal.wal_buffers has no column in " + csv +
            "; compare one slice with --fix wal_buffers=VALUE (values: 64, 512)");

  opts.fixes = {"wal_buffers=512"};
  ojson cmp = fidelity_compare(doc, ref, opts);
  CHECK(cmp["left_out_by_fix"] == 9);
  CHECK(cmp["baseline"].is_null());  // three variants and no --baseline: no ratios
  CHECK(cmp["no_ratios"] == "3 variants; pick the denominator with --baseline");
  CHECK(cmp["series"][0]["curves"][0]["points"][0]["result_tps"] == 200.0);

  opts.baseline = "a";
  cmp = fidelity_compare(doc, ref, opts);
  REQUIRE(cmp["series"][0]["ratios"].size() == 2);
  // b / a: 2.0 on both sides, scored; c / a: reference 1.04, 1.04, 1.025 (published ties within
  // 10%), result 3.0.
  CHECK(cmp["series"][0]["ratios"][1]["points"][0]["kind"] == "published_tie");
  CHECK(cmp["series"][0]["ratios"][1]["points"][0]["result_winner"] == "c");
  CHECK(cmp["summary"]["winners"] == ojson{{"agree", 3}, {"scored", 3}});
  CHECK(cmp["summary"]["published_ties"] == ojson{{"points", 3}, {"result_tie", 0}});
  opts.win_threshold_pct = 3;  // now 1.04 is a published win for c; 1.025 stays a tie
  cmp = fidelity_compare(doc, ref, opts);
  CHECK(cmp["series"][0]["ratios"][1]["points"][0]["kind"] == "scored");
  CHECK(cmp["series"][0]["ratios"][1]["points"][0]["reference_winner"] == "c");
  CHECK(cmp["series"][0]["ratios"][1]["points"][2]["kind"] == "published_tie");
  CHECK(cmp["summary"]["winners"] == ojson{{"agree", 5}, {"scored", 5}});
  CHECK(cmp["summary"]["published_ties"] == ojson{{"points", 1}, {"result_tie", 0}});

  opts.baseline = "d";
  CHECK(usage_error([&] { fidelity_compare(doc, ref, opts); }) ==
        "compare: --baseline d: not a compared variant (compared: a, b, c)");
}

TEST_CASE("fidelity: bad tables and results are one-line errors naming the file", "[fidelity]") {
  TempDir dir;
  const std::string result = dir.write("r.json", result_file(matching_cells()));
  auto csv_error = [&](const std::string& text) {
    const std::string csv = dir.write("bad.csv", text);
    return usage_error([&] { load_reference_csv(csv); });
  };
  const std::string bad = (dir.path / "bad.csv").string();

  CHECK(csv_error("variant,clients,record_size\nwaitlist,1,16\n") ==
        bad + ":1: header lacks column tps; a reference table needs variant, clients and tps (the "
              "header has variant, clients, record_size)");
  CHECK(csv_error("name,threads,tps\n") ==
        bad + ":1: header lacks columns variant, clients; a reference table needs variant, clients "
              "and tps (the header has name, threads, tps)");
  CHECK(csv_error("variant,clients,tps\na,1,10\n\na,2\n") == bad + ":4: expected 3 fields (variant,clients,tps), found 2");
  CHECK(csv_error("variant,clients,tps\na,many,10\n") ==
        bad + ":2: column \"clients\": expected a positive integer, found \"many\"");
  CHECK(csv_error("variant,clients,tps\na,0,10\n") ==
        bad + ":2: column \"clients\": expected a positive integer, found \"0\"");
  CHECK(csv_error("variant,clients,tps\na,1,fast\n") ==
        bad + ":2: column \"tps\": expected a non-negative number, found \"fast\"");
  CHECK(csv_error("variant,clients,tps\na,1,10\na,1,11\n") ==
        bad + ":3: duplicate row: variant=a clients=1 (first at line 2)");
  CHECK(csv_error("variant,clients,tps\n\"a,1,10\n") == bad + ":2: unterminated quote");
  CHECK(csv_error("") == bad + ": the reference table is empty; expected a header with variant, clients and tps");
  CHECK(csv_error("variant,clients,tps\n") == bad + ": the reference table has a header but no rows");
  CHECK(usage_error([&] { load_reference_csv((dir.path / "missing.csv").string()); }) ==
        (dir.path / "missing.csv").string() + ": cannot read reference table: No such file or directory");

  // Quoted fields, CRLF line ends and a BOM are read.
  const std::string ok = dir.write("ok.csv", "\xEF\xBB\xBFvariant,clients,tps\r\n\"wait, list\",1,10\r\n");
  const ReferenceTable t = load_reference_csv(ok);
  REQUIRE(t.rows.size() == 1);
  CHECK(t.rows[0].variant == "wait, list");
  CHECK(t.rows[0].tps == 10);

  // No overlap at all.
  const std::string other = dir.write("other.csv", "variant,clients,record_size,tps\nsingle_lock,1,16,5\n");
  FidelityOptions opts;
  opts.result_path = result;
  opts.reference_path = other;
  CHECK(usage_error([&] {
          std::ostringstream out, err;
          fidelity_command(opts, out, err);
        }) == "compare: no cell of " + result + " matches a row of " + other +
                  " (reference variants: single_lock; result variants: atomic, waitlist); check --variant and --fix");
  // ... until a rename makes one.
  opts.renames = {"waitlist=single_lock"};
  std::ostringstream out, err;
  CHECK(fidelity_command(opts, out, err) == 0);
  CHECK(out.str().find("single_lock_1_clients") != std::string::npos);

  // A malformed result cell names its JSON path.
  json cells = matching_cells();
  cells[3]["matrix"] = 5;
  const std::string broken = dir.write("broken.json", result_file(cells));
  opts.result_path = broken;
  opts.reference_path = dir.write("t.csv", kTable);
  CHECK(usage_error([&] { fidelity_command(opts, out, err); }) == broken + ": /cells/3/matrix: expected an object");
  opts.result_path = dir.write("empty.json", "");
  CHECK(usage_error([&] { fidelity_command(opts, out, err); }).find("empty.json: not a walbench result file") !=
        std::string::npos);

  opts.result_path = result;
  opts.renames = {"waitlist"};
  CHECK(usage_error([&] { fidelity_command(opts, out, err); }) ==
        "compare: --variant waitlist: expected RESULT_LABEL=CSV_VARIANT");
}

TEST_CASE("fidelity: --json writes the comparison atomically", "[fidelity]") {
  TempDir dir;
  FidelityOptions opts;
  opts.result_path = dir.write("r.json", result_file(matching_cells()));
  opts.reference_path = dir.write("t.csv", kTable);
  opts.json_path = (dir.path / "cmp.json").string();
  std::ostringstream out, err;
  REQUIRE(fidelity_command(opts, out, err) == 0);
  CHECK(!fs::exists(opts.json_path + ".tmp"));
  const ojson written = ojson::parse(std::ifstream(opts.json_path));
  const ojson expected = fidelity_compare(json::parse(std::ifstream(opts.result_path)),
                                          load_reference_csv(opts.reference_path), opts);
  CHECK(written == expected);
  CHECK(written["fidelity_version"] == 3);
  CHECK(written.begin().key() == "fidelity_version");  // ordered as documented
  CHECK(render_fidelity(written) == out.str());

  opts.json_path = (dir.path / "no-such-dir" / "cmp.json").string();
  std::ostringstream out2;
  CHECK(usage_error([&] { fidelity_command(opts, out2, err); }).find("compare --json: cannot write") == 0);
  CHECK(out2.str().empty());  // nothing printed when the JSON could not be written
}

}  // namespace walbench

namespace walbench {
namespace {

struct Cli {
  int rc = -1;
  std::string out, err;
};

// Runs `walbench ARGS` (through the shell, as written).
Cli walbench_cli(const std::string& args, const TempDir& dir) {
  const std::string out = (dir.path / "stdout.txt").string(), err = (dir.path / "stderr.txt").string();
  const int status = std::system(("'" + std::string(WALBENCH_BINARY) + "' " + args + " >'" + out + "' 2>'" + err + "'").c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  };
  return Cli{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

void check_one_line_error(const Cli& r, const std::string& needle) {
  INFO("stderr: " << r.err);
  CHECK(r.rc == 2);
  CHECK(r.err.rfind("walbench: error: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("fidelity: walbench compare --reference end to end", "[fidelity][cli]") {
  TempDir dir;
  const std::string result = dir.write("r.json", result_file(matching_cells()));
  const std::string csv = dir.write("t.csv", kTable);
  const std::string json_out = (dir.path / "cmp.json").string();

  Cli r = walbench_cli("compare '" + result + "' --reference '" + csv + "' --tie-pct 5 --json '" + json_out + "'", dir);
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("peak distance:  4 of 4 curves scored") != std::string::npos);
  CHECK(fs::exists(json_out));

  // Mismatches are findings: still status 0.
  json cells = matching_cells();
  cells[8]["summary"]["tps_median"] = 9000;
  r = walbench_cli("compare '" + dir.write("m.json", result_file(cells)) + "' --reference '" + csv + "'", dir);
  CHECK(r.rc == 0);
  CHECK(r.out.find("mismatches (1):") != std::string::npos);

  check_one_line_error(walbench_cli("compare '" + result + "' --reference '" +
                                        dir.write("bad.csv", "variant,clients\na,1\n") + "'", dir),
                       "bad.csv:1: header lacks column tps");
  check_one_line_error(walbench_cli("compare '" + result + "' --fix tables=permanent", dir),
                       "compare: --fix needs --reference");
  check_one_line_error(walbench_cli("compare '" + result + "'", dir), "compare: NEW is required");
  check_one_line_error(walbench_cli("compare '" + result + "' '" + result + "' --reference '" + csv + "'", dir),
                       "compare: --reference compares one result file with a table");
  check_one_line_error(walbench_cli("compare '" + result + "' --reference '" + csv + "' --tie-pct 150", dir),
                       "--tie-pct");
  check_one_line_error(
      walbench_cli("compare '" + result + "' --reference '" + csv + "' --win-threshold-pct 100", dir),
      "--win-threshold-pct");
  check_one_line_error(walbench_cli("compare '" + result + "' --win-threshold-pct 20", dir),
                       "compare: --win-threshold-pct needs --reference");
  check_one_line_error(walbench_cli("compare '" + result + "' --reference '" + csv + "' --fitted-from '" +
                                        dir.write("nofit.json", "{\"description\": \"x\"}") + "'", dir),
                       "nofit.json: expected a config with a top-level \"fitted\" list (--fitted-from)");

  // The two-file compare still works.
  r = walbench_cli("compare '" + result + "' '" + result + "'", dir);
  CHECK(r.rc == 0);
  CHECK(r.out.find("geometric mean change: +0.0% over 16 cells") != std::string::npos);

  r = walbench_cli("compare --help", dir);
  CHECK(r.rc == 0);
  for (const char* opt :
       {"--reference", "--fix", "--variant", "--baseline", "--tie-pct", "--win-threshold-pct", "--fitted-from", "--json"}) {
    INFO(opt);
    CHECK(r.out.find(opt) != std::string::npos);
  }
}


// ---- Wait-event tables (fidelity.h, "Wait-event tables") ----

json wait_cell(const std::string& strategy, int clients, double tps, const json& events) {
  json c = cell("pg10", clients, tps, {{"clog.strategy", strategy}});
  c["matrix"].erase("strategy");
  c["workload"]["name"] = "simple_update";
  c["repetitions"] = json::array({{{"wait_events", events}}});
  return c;
}

TEST_CASE("fidelity: the CLOG wait-event table parses", "[fidelity][clog]") {
  const std::string path = std::string(WALBENCH_SOURCE_DIR) +
                           "/../shared/reference/clog-group-update-wait-events-128core.csv";
  if (!fs::exists(path)) {
    WARN("no " << path << ": skipped");
    return;
  }
  CHECK(is_wait_event_csv(path));
  const WaitEventTable t = load_wait_event_csv(path);
  CHECK(t.other_columns == std::vector<std::string>{"workload"});
  REQUIRE(t.rows.size() == 41);
  CHECK(t.rows[0].variant == "clog_exclusive");
  CHECK(t.rows[0].clients == 64);
  CHECK(t.rows[0].wait_event == "Client:ClientRead");
  CHECK(t.rows[0].samples == 53808);
  CHECK(t.rows[0].values == std::vector<std::string>{"simple_update"});
}

TEST_CASE("fidelity: wait-event tables reject malformed rows", "[fidelity][clog]") {
  TempDir d;
  const auto err = [&](const std::string& text) {
    try {
      load_wait_event_csv(d.write("w.csv", text));
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(err("variant,clients,wait_event\nx,1,A\n").find("lacks column samples") != std::string::npos);
  CHECK(err("variant,clients,wait_event,samples\nx,0,A,1\n").find("positive integer") != std::string::npos);
  CHECK(err("variant,clients,wait_event,samples\nx,1,A,-1\n").find("non-negative") != std::string::npos);
  CHECK(err("variant,clients,wait_event,samples\nx,1,A,1\nx,1,A,2\n").find("duplicate") != std::string::npos);
  CHECK(err("variant,clients,wait_event,samples\nx,1,A\n").find("expected 4 fields") != std::string::npos);
  CHECK_FALSE(is_wait_event_csv(d.write("t.csv", "variant,clients,tps\nx,1,5\n")));
}

TEST_CASE("fidelity: wait-event shares, TVD, top event and the tps claims", "[fidelity][clog]") {
  TempDir d;
  const std::string csv = d.write("w.csv",
                                  "variant,workload,clients,wait_event,samples\n"
                                  "clog_exclusive,simple_update,64,Client:ClientRead,60\n"
                                  "clog_exclusive,simple_update,64,LWLock:CLogControlLock,40\n"
                                  "clog_group_update,simple_update,64,Client:ClientRead,100\n"
                                  "clog_exclusive,simple_update,128,LWLock:CLogControlLock,75\n"
                                  "clog_exclusive,simple_update,128,Client:ClientRead,25\n"
                                  "clog_group_update,simple_update,128,Client:ClientRead,100\n");
  // Result: exclusive 64 has the mix exactly (CPU and an unlisted event do not count);
  // exclusive 128 has it reversed; group update has only ClientRead.
  const json cells = json::array(
      {wait_cell("clog_exclusive", 64, 1000,
                 {{"CPU", 500}, {"Client:ClientRead", 6}, {"LWLock:CLogControlLock", 4}, {"LWLock:XidGenLock", 10}}),
       wait_cell("clog_group_update", 64, 1100, {{"Client:ClientRead", 7}}),
       wait_cell("clog_exclusive", 128, 800, {{"Client:ClientRead", 3}, {"LWLock:CLogControlLock", 1}}),
       wait_cell("clog_group_update", 128, 1150, {{"Client:ClientRead", 9}})});
  const std::string res = d.write("r.json", result_file(cells));
  FidelityOptions opts;
  opts.result_path = res;
  opts.reference_path = csv;
  std::ostringstream out, err;
  REQUIRE(fidelity_command(opts, out, err) == 0);
  Run r;
  r.cmp = wait_event_compare(nlohmann::json::parse(std::ifstream(res)), load_wait_event_csv(csv), opts);
  r.text = out.str();
  CHECK(r.text == render_wait_event_compare(r.cmp));
  INFO(r.text);
  REQUIRE(r.cmp["mode"] == "wait_events");
  const ojson& c = r.cmp["cells"];
  REQUIRE(c.size() == 4);
  CHECK(c[0]["variant"] == "clog_exclusive");
  CHECK(c[0]["tvd"].get<double>() == Approx(0));
  CHECK(c[0]["top_agrees"] == true);
  CHECK(c[0]["events"][1]["result_share"].get<double>() == Approx(0.4));
  CHECK(c[0]["unlisted_share"]["LWLock:XidGenLock"].get<double>() == Approx(0.5));
  // exclusive 128: published 75/25, result 25/75 -> TVD 0.5, top disagrees.
  CHECK(c[2]["tvd"].get<double>() == Approx(0.5));
  CHECK(c[2]["top_agrees"] == false);
  CHECK(r.cmp["summary"]["top_agree"] == 3);
  CHECK(r.cmp["summary"]["tvd_max"].get<double>() == Approx(0.5));
  const ojson& cl = r.cmp["claims"];
  CHECK(cl["baseline"] == "clog_exclusive");
  CHECK(cl["baseline_falls"] == true);
  CHECK(cl["other_holds"] == true);
  CHECK(cl["advantage_grows"] == true);
  CHECK(cl["published_ratio"][1].get<double>() == Approx(1.64));
  CHECK(r.text.find("falls (as published)") != std::string::npos);
  CHECK(r.text.find("TVD 0.500") != std::string::npos);

  // Moves inside the tie band (5%) are no claim: 1000 -> 990 does not fall, a ratio of
  // 1.000 -> 1.010 does not grow.
  const json flat = json::array({wait_cell("clog_exclusive", 64, 1000, {{"Client:ClientRead", 6}}),
                                 wait_cell("clog_group_update", 64, 1000, {{"Client:ClientRead", 7}}),
                                 wait_cell("clog_exclusive", 128, 990, {{"Client:ClientRead", 3}}),
                                 wait_cell("clog_group_update", 128, 1000, {{"Client:ClientRead", 9}})});
  const std::string res_flat = d.write("flat.json", result_file(flat));
  opts.result_path = res_flat;
  const ojson fl = wait_event_compare(nlohmann::json::parse(std::ifstream(res_flat)), load_wait_event_csv(csv), opts);
  CHECK(fl["claims"]["baseline_falls"] == false);
  CHECK(fl["claims"]["other_holds"] == true);
  CHECK(fl["claims"]["advantage_grows"] == false);
  const std::string flat_text = render_wait_event_compare(fl);
  CHECK(flat_text.find("does not fall (published: falls)") != std::string::npos);
  CHECK(flat_text.find("the advantage does not grow") != std::string::npos);
  opts.result_path = res;

  // A fitted cell (the config's list) is shown but not scored.
  const json cfg = {{"fitted", json::array({{{"variant", "clog_exclusive"}, {"clients", 128}, {"reason", "tuned here"}}})}};
  const std::string res2 = d.write("r2.json", result_file(cells, cfg));
  opts.result_path = res2;
  const ojson f = wait_event_compare(nlohmann::json::parse(std::ifstream(res2)), load_wait_event_csv(csv), opts);
  CHECK(f["cells"][2]["fitted"] == "tuned here");
  CHECK(f["summary"]["cells_fitted"] == 1);
  CHECK(f["summary"]["cells_compared"] == 3);
  CHECK(f["summary"]["tvd_max"].get<double>() == Approx(0));
  CHECK(render_wait_event_compare(f).find("(fitted, not scored: tuned here)") != std::string::npos);
}

}  // namespace walbench
