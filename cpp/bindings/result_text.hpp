// A result's citation text, natively, as chrono_engine/search.py writes it (_few_citations:
// the Python reference, which the tests compare with this on every edge they name): the
// title, the version in canonical form (schema.py parse_version then format_version) and
// the calendar day (UTC) of valid_from.
//   en: "per <title|untitled>[ <version>], effective YYYY-MM-DD"
//   zh: "依据《<title|未命名文档>》<version>（YYYY-MM-DD 起施行）"
// Each helper says false where the Python path would do anything else (a version string
// that does not parse: Python raises; a day outside years 1-9999): the caller then takes
// the Python path, so no input gives a different answer here.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace chrono_text {

// `s` as parse_version reads it (up to 4 dot-separated ASCII-digit components, each at
// most 5 digits after leading zeros and below 65536, an optional leading v / V), written
// as format_version writes its key ("v2.1.0"; a fourth component only when not 0).
inline bool canonical_version(std::string_view s, std::string& out) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == 'v' || s[i] == 'V')) ++i;
  std::uint32_t parts[4] = {0, 0, 0, 0};
  int nc = 0;
  for (;;) {
    if (nc == 4) return false;
    std::size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    if (j == i) return false;
    std::size_t k = i;
    while (k + 1 < j && s[k] == '0') ++k;  // leading zeros (one digit kept)
    if (j - k > 5) return false;
    std::uint32_t v = 0;
    for (std::size_t x = k; x < j; ++x) v = v * 10 + static_cast<std::uint32_t>(s[x] - '0');
    if (v >= 65536) return false;
    parts[nc++] = v;
    if (j == s.size()) break;
    if (s[j] != '.') return false;
    i = j + 1;
  }
  out = "v" + std::to_string(parts[0]) + "." + std::to_string(parts[1]) + "." + std::to_string(parts[2]);
  if (parts[3] != 0) out += "." + std::to_string(parts[3]);
  return true;
}

// The UTC calendar day of `us` (µs since the epoch, floored to the day) as YYYY-MM-DD, as
// NumPy's datetime64[D] writes it for years 1 to 9999 (H. Hinnant's civil_from_days).
inline bool day_text(std::int64_t us, char out[11]) {
  constexpr std::int64_t kDay = 86'400'000'000LL;
  std::int64_t z = us / kDay;
  if (us % kDay != 0 && us < 0) --z;  // floor
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  std::int64_t y = yoe + era * 400;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const std::int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const std::int64_t m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) ++y;
  if (y < 1 || y > 9999) return false;
  const auto digits = [&](int at, std::int64_t v, int width) {
    for (int i = width - 1; i >= 0; --i, v /= 10) out[at + i] = static_cast<char>('0' + v % 10);
  };
  digits(0, y, 4);
  out[4] = '-';
  digits(5, m, 2);
  out[7] = '-';
  digits(8, d, 2);
  out[10] = '\0';
  return true;
}

// The citation of one hit appended to `out`; title / version null when `has_*` is false.
inline bool append_citation(std::string& out, bool zh, bool has_title, std::string_view title, bool has_version,
                            std::string_view version, std::int64_t valid_from) {
  std::string ver;
  if (has_version && !canonical_version(version, ver)) return false;
  char day[11];
  if (!day_text(valid_from, day)) return false;
  if (zh) {
    out += "\xe4\xbe\x9d\xe6\x8d\xae\xe3\x80\x8a";  // 依据《
    if (has_title) out.append(title); else out += "\xe6\x9c\xaa\xe5\x91\xbd\xe5\x90\x8d\xe6\x96\x87\xe6\xa1\xa3";  // 未命名文档
    out += "\xe3\x80\x8b";  // 》
    out += ver;
    out += "\xef\xbc\x88";  // （
    out += day;
    out += " \xe8\xb5\xb7\xe6\x96\xbd\xe8\xa1\x8c\xef\xbc\x89";  // " 起施行）"
  } else {
    out += "per ";
    if (has_title) out.append(title); else out += "untitled";
    if (!ver.empty()) { out += ' '; out += ver; }
    out += ", effective ";
    out += day;
  }
  return true;
}

}  // namespace chrono_text
