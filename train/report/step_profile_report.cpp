#include "train/report/step_profile_report.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <utility>
#include <vector>

#include "runtime/atomic_file.h"
#include "runtime/log.h"

namespace zt::train {
namespace {

struct FamilyRow {
  const char* name;
  double ms_per_step;
  double share;
  double regions_per_step;
};

// The families that took time, largest first.
std::vector<FamilyRow> rows_of(const StepProfile& profile) {
  std::vector<FamilyRow> rows;
  const double steps = static_cast<double>(std::max<std::int64_t>(profile.steps, 1));
  for (std::size_t f = 0; f < kOpFamilyCount; ++f) {
    const OpFamilyTime& time = profile.families[f];
    if (time.ms <= 0.0 && time.regions == 0) continue;
    rows.push_back({op_family_name(static_cast<OpFamily>(f)), time.ms / steps,
                    profile.step_ms > 0.0 ? time.ms / profile.step_ms : 0.0,
                    static_cast<double>(time.regions) / steps});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const FamilyRow& a, const FamilyRow& b) { return a.ms_per_step > b.ms_per_step; });
  return rows;
}

double ms_per_step(const StepProfile& profile) {
  return profile.steps > 0 ? profile.step_ms / static_cast<double>(profile.steps) : 0.0;
}

}  // namespace

std::string step_profile_table(const StepProfile& profile, std::int64_t first_step, const std::string& device) {
  std::ostringstream out;
  char line[160];
  std::snprintf(line, sizeof line, "step profile: steps %lld-%lld on %s, %.2f ms per step (device time)\n",
                static_cast<long long>(first_step), static_cast<long long>(first_step + profile.steps - 1),
                device.c_str(), ms_per_step(profile));
  out << line;
  std::snprintf(line, sizeof line, "  %-16s %10s %7s %13s\n", "family", "ms/step", "share", "regions/step");
  out << line;
  for (const FamilyRow& row : rows_of(profile)) {
    std::snprintf(line, sizeof line, "  %-16s %10.3f %6.1f%% %13.1f\n", row.name, row.ms_per_step, 100.0 * row.share,
                  row.regions_per_step);
    out << line;
  }
  out << "  (untracked: the device waiting on the host, synchronisations, and work outside every op)";
  return out.str();
}

nlohmann::json step_profile_json(const StepProfile& profile, std::int64_t first_step, const std::string& device) {
  nlohmann::json families = nlohmann::json::array();
  for (const FamilyRow& row : rows_of(profile))
    families.push_back({{"name", row.name},
                        {"ms_per_step", row.ms_per_step},
                        {"share", row.share},
                        {"regions_per_step", row.regions_per_step}});
  return {{"device", device},       {"first_step", first_step},        {"last_step", first_step + profile.steps - 1},
          {"steps", profile.steps}, {"step_ms", ms_per_step(profile)}, {"families", std::move(families)}};
}

StepProfileSession::StepProfileSession(Device device, std::int64_t steps, std::string output_dir, bool reports)
    : profiler_(device), device_(device), steps_(steps), output_dir_(std::move(output_dir)), reports_(reports) {}

void StepProfileSession::begin(std::int64_t step) {
  if (!chosen(step)) return;
  if (first_profiled_ == 0) first_profiled_ = step;
  profiler_.begin_step();
}

void StepProfileSession::end(std::int64_t step) {
  if (!chosen(step)) return;
  profiler_.end_step();
  if (step == kFirstStep + steps_ - 1) report();
}

void StepProfileSession::finish() {
  if (first_profiled_ == 0 && reports_ && !reported_) {
    ZT_LOG(kWarn, "--profile_steps: training ended before step " << kFirstStep
                                                                 << ", the first profiled step (step 1 warms up)");
    reported_ = true;
  }
  if (first_profiled_ != 0) report();
}

void StepProfileSession::report() {
  if (reported_ || !reports_) return;
  reported_ = true;
  const StepProfile& profile = profiler_.profile();
  ZT_LOG(kInfo, step_profile_table(profile, first_profiled_, device_.str()));
  const std::filesystem::path path = std::filesystem::path(output_dir_) / "step_profile.json";
  std::filesystem::create_directories(output_dir_);
  write_file_atomically(path.string(), step_profile_json(profile, first_profiled_, device_.str()).dump(2) + "\n");
  ZT_LOG(kInfo, "step profile written to " << path.string());
}

}  // namespace zt::train
