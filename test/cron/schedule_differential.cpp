//
// test/cron/schedule_differential.cpp
//
// Seeded differential test of cron::schedule::next_after against a brute-force reference.
//
// A seeded generator writes random 5-field expressions and, beside each, the sets of values
// it means (so the reference never reads the parser's output). The reference steps UTC
// minute by minute through a window (around a transition of a random zone in a random year
// from 2010 to 2030, or anywhere), converts each minute to the wall clock with the date
// library, and fires where the DST policy says in its plainest terms:
//   every hour (the hour set is all 24): the wall-clock time matches;
//   named hours: the wall-clock time matches and is not the second pass of a fold, and at a
//     forward jump, once, if any skipped wall-clock minute matches.
// The schedule's answer is next_after repeated from the window's start. Both lists must be
// equal. A second case does the same from 2039 to 2060 (where the zone files' POSIX TZ rules
// apply) with the offsets read from `zdump -v`, so the reference does not share the date
// library with the code under test. Every offset of the zones below in those years is whole
// minutes, so minute steps see every occurrence.
//
// Environment: TIMEWHEEL_SEED (printed) replays a run; TIMEWHEEL_OPS, the number of windows.
//

#define BOOST_TEST_MODULE cron_schedule_differential
#include <timewheel/cron/schedule.hpp>

#include <test/support/seed.hpp>

#include <boost/test/unit_test.hpp>

#include <date/date.h>
#include <date/tz.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace cron = timewheel::cron;
using namespace std::chrono;
using namespace std::chrono_literals;

namespace {

constexpr std::array<const char*, 13> zones{"Europe/Berlin",
                                            "Australia/Lord_Howe",
                                            "America/Santiago",
                                            "Asia/Beirut",
                                            "Pacific/Apia",
                                            "America/Sao_Paulo",
                                            "Europe/Moscow",
                                            "America/St_Johns",
                                            "America/New_York",
                                            "Asia/Kathmandu",
                                            "UTC",
                                            "Africa/Casablanca",
                                            "Europe/Dublin"};

// One field as text and as the set of values it means.
struct field {
    std::string text;
    std::uint64_t set = 0;
};

class generator {
public:
    explicit generator(std::uint64_t seed)
        : rng_(seed) {}

    int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
    bool chance(int percent) { return uniform(0, 99) < percent; }

    // A field over lo..hi; `star_hi` is what `*` stands for; `modulo` folds values
    // (day-of-week 7 is 0).
    field make(int lo, int hi, int star_hi, int star_percent, int modulo) {
        field f;
        auto add = [&](int v) { f.set |= std::uint64_t{1} << (v % modulo); };
        const int kind = chance(star_percent) ? uniform(0, 1) : uniform(2, 5);
        switch (kind) {
        case 0:
            f.text = "*";
            for (int v = lo; v <= star_hi; ++v)
                add(v);
            break;
        case 1: {
            const int n = uniform(1, std::min(star_hi - lo + 1, 30));
            f.text = "*/" + std::to_string(n);
            for (int v = lo; v <= star_hi; v += n)
                add(v);
            break;
        }
        case 2: {
            const int count = uniform(1, 6);
            for (int i = 0; i < count; ++i) {
                const int v = uniform(lo, hi);
                f.text += (i == 0 ? "" : ",") + std::to_string(v);
                add(v);
            }
            break;
        }
        case 3: {
            int a = uniform(lo, hi);
            int b = uniform(lo, hi);
            if (a > b)
                std::swap(a, b);
            f.text = std::to_string(a) + "-" + std::to_string(b);
            for (int v = a; v <= b; ++v)
                add(v);
            break;
        }
        case 4: {
            int a = uniform(lo, hi);
            int b = uniform(lo, hi);
            if (a > b)
                std::swap(a, b);
            const int n = uniform(1, std::min(10, star_hi - lo + 1));
            f.text = std::to_string(a) + "-" + std::to_string(b) + "/" + std::to_string(n);
            for (int v = a; v <= b; v += n)
                add(v);
            break;
        }
        default: {
            const int a = uniform(lo, star_hi);
            const int n = uniform(1, std::min(10, star_hi - lo + 1));
            f.text = std::to_string(a) + "/" + std::to_string(n);
            for (int v = a; v <= star_hi; v += n)
                add(v);
            break;
        }
        }
        return f;
    }

    std::mt19937_64& rng() { return rng_; }

private:
    std::mt19937_64 rng_;
};

struct expression {
    field minute, hour, day, month, weekday;
    std::string text() const {
        return minute.text + " " + hour.text + " " + day.text + " " + month.text + " " +
               weekday.text;
    }
    bool every_hour() const { return hour.set == 0xFFFFFF; }

    bool matches(local_seconds l) const {
        const auto day_start = floor<days>(l);
        const year_month_day date{day_start};
        const hh_mm_ss<seconds> time{l - day_start};
        if (time.seconds().count() != 0)
            return false;
        if ((minute.set >> time.minutes().count() & 1) == 0 ||
            (hour.set >> time.hours().count() & 1) == 0 ||
            (month.set >> static_cast<unsigned>(date.month()) & 1) == 0)
            return false;
        const bool dom = (day.set >> static_cast<unsigned>(date.day()) & 1) != 0;
        const bool dow = (weekday.set >> std::chrono::weekday{day_start}.c_encoding() & 1) != 0;
        if (day.text[0] == '*' || weekday.text[0] == '*')
            return dom && dow;
        return dom || dow;
    }
};

expression random_expression(generator& g) {
    expression e;
    e.minute = g.make(0, 59, 59, 40, 64);
    e.hour = g.chance(40) ? field{"*", 0xFFFFFF} : g.make(0, 23, 23, 10, 64);
    e.day = g.make(1, 31, 31, 75, 64);
    e.month = g.make(1, 12, 12, 85, 64);
    e.weekday = g.make(0, 7, 6, 75, 7);
    return e;
}

local_seconds local_of(sys_seconds u, seconds offset) {
    return local_seconds{(u + offset).time_since_epoch()};
}

// The span of constant offset an instant is in, from one source or the other: its start and
// its offset.
struct offset_at {
    sys_seconds begin;
    seconds offset;
};

// The policy in its plainest terms (see the top). `zone_at(u)` gives the span of u.
template <typename ZoneAt>
std::vector<sys_seconds> reference(const expression& e, ZoneAt zone_at, sys_seconds a,
                                   sys_seconds b) {
    std::vector<sys_seconds> out;
    for (sys_seconds u = a; u < b; u += 1min) {
        const offset_at info = zone_at(u);
        const local_seconds l = local_of(u, info.offset);
        bool fire = e.matches(l);
        if (e.every_hour()) {
            if (fire)
                out.push_back(u);
            continue;
        }
        const offset_at before = zone_at(info.begin - 1s);
        // The second pass of a fold: the same wall-clock time was shown before the change.
        if (fire && before.offset > info.offset && u < info.begin + (before.offset - info.offset))
            fire = false;
        if (info.begin == u) {
            for (auto s = local_of(u, before.offset); s < l; s += 1min)
                fire = fire || e.matches(s); // a wall-clock minute the jump skipped
        }
        if (fire)
            out.push_back(u);
    }
    return out;
}

// The transitions of a zone from `zdump -v` (another reader of the same files, which applies
// their POSIX TZ rules after 2037 as the C library does).
std::vector<std::pair<sys_seconds, seconds>> zdump(const std::string& zone, int from, int to) {
    const std::string command =
        "zdump -v -c " + std::to_string(from) + "," + std::to_string(to) + " " + zone;
    std::vector<std::pair<sys_seconds, seconds>> out;
    FILE* pipe = popen(command.c_str(), "r");
    BOOST_REQUIRE_MESSAGE(pipe != nullptr, "cannot run " << command);
    char line[512];
    static const std::array<std::string_view, 12> months{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    while (std::fgets(line, sizeof line, pipe) != nullptr) {
        // Zone  Sun Mar 25 01:00:00 2040 UT = Sun Mar 25 03:00:00 2040 CEST isdst=1 gmtoff=7200
        std::istringstream in(line);
        std::string name, dow, mon, ut;
        int d = 0, h = 0, mi = 0, sec = 0, y = 0;
        char colon = 0;
        if (!(in >> name >> dow >> mon >> d >> h >> colon >> mi >> colon >> sec >> y >> ut) ||
            ut != "UT")
            continue;
        const char* g = std::strstr(line, "gmtoff=");
        const auto m = std::find(months.begin(), months.end(), mon);
        if (g == nullptr || m == months.end())
            continue;
        const sys_seconds t = sys_days{year{y} / static_cast<int>(m - months.begin() + 1) / d} +
                              hours{h} + minutes{mi} + seconds{sec};
        const seconds offset{std::atol(g + 7)};
        if (out.empty() || out.back().second != offset)
            out.emplace_back(t, offset);
    }
    pclose(pipe);
    return out;
}

std::vector<sys_seconds> answers(const cron::schedule& s, sys_seconds a, sys_seconds b) {
    std::vector<sys_seconds> out;
    cron::time_point t = cron::time_point{a} - 1ms;
    for (;;) {
        const auto n = s.next_after(t);
        if (!n || *n >= b)
            return out;
        out.push_back(floor<seconds>(*n));
        BOOST_REQUIRE(*n > t);
        t = *n;
    }
}

std::string show(const std::vector<sys_seconds>& v) {
    std::ostringstream out;
    for (std::size_t i = 0; i < v.size() && i < 40; ++i)
        out << date::format("%FT%TZ", v[i]) << " ";
    if (v.size() > 40)
        out << "... (" << v.size() << ")";
    return out.str();
}

} // namespace

BOOST_AUTO_TEST_CASE(next_after_agrees_with_a_minute_by_minute_reference) {
    const auto seed = timewheel::test::seed_from_environment("cron_schedule_differential",
                                                             std::random_device{}());
    const auto windows = timewheel::test::env_number("TIMEWHEEL_OPS").value_or(300);
    generator g(seed);
    std::size_t fired = 0;
    for (std::uint64_t i = 0; i < windows; ++i) {
        const char* name = zones[static_cast<std::size_t>(g.uniform(0, zones.size() - 1))];
        const auto* z = date::locate_zone(name);
        const int y = g.uniform(2010, 2030);
        sys_seconds centre =
            sys_seconds{sys_days{year{y} / 1 / 1}} + seconds{g.uniform(0, 364 * 86400)};
        if (g.chance(75)) {
            // Around the k-th transition of the year (if the zone has one).
            auto info = z->get_info(sys_seconds{sys_days{year{y} / 1 / 1}});
            for (int k = g.uniform(0, 2); k > 0 && info.end < sys_days{year{y + 1} / 1 / 1}; --k)
                info = z->get_info(info.end);
            if (info.end < sys_days{year{y + 1} / 1 / 1})
                centre = info.end;
        }
        const sys_seconds a = floor<minutes>(centre) - minutes{g.uniform(1, 30 * 60)};
        const sys_seconds b = floor<minutes>(centre) + minutes{g.uniform(1, 30 * 60)};
        const auto e = random_expression(g);
        const auto s = cron::schedule::parse(e.text(), name);
        const auto want = reference(
            e,
            [z](sys_seconds u) {
                const auto info = z->get_info(u);
                return offset_at{info.begin, info.offset};
            },
            a, b);
        const auto got = answers(s, a, b);
        fired += want.size();
        BOOST_TEST_REQUIRE(got == want, "seed " << seed << " window " << i << ": \"" << e.text()
                                                << "\" in " << name << " from "
                                                << date::format("%FT%TZ", a) << " to "
                                                << date::format("%FT%TZ", b) << "\n want "
                                                << show(want) << "\n got  " << show(got));
    }
    // The windows must have seen occurrences, or the test compares empty lists.
    BOOST_TEST(fired > windows);
}

// After 2037 the zone files' POSIX TZ rules apply (src/cron/zone.cpp): here the reference's
// offsets come from zdump, not from the date library.
BOOST_AUTO_TEST_CASE(after_2037_next_after_agrees_with_zdump) {
    const auto seed = timewheel::test::seed_from_environment("cron_schedule_differential 2038+",
                                                             std::random_device{}());
    generator g(seed);
    constexpr std::array<const char*, 6> tail_zones{"Europe/Berlin",    "Australia/Lord_Howe",
                                                    "America/Santiago", "America/St_Johns",
                                                    "Pacific/Auckland", "Antarctica/Troll"};
    std::size_t fired = 0;
    for (const char* name : tail_zones) {
        const auto changes = zdump(name, 2039, 2060);
        BOOST_REQUIRE_MESSAGE(changes.size() > 20, "zdump gave no transitions for " << name);
        const auto zone_at = [&changes](sys_seconds u) {
            auto it = std::upper_bound(changes.begin(), changes.end(), u,
                                       [](sys_seconds x, const std::pair<sys_seconds, seconds>& c) {
                                           return x < c.first;
                                       });
            BOOST_REQUIRE(it != changes.begin());
            --it;
            return offset_at{it->first, it->second};
        };
        for (int i = 0; i < 40; ++i) {
            // Around a transition (not the first: its span's start is not known).
            const auto& change = changes[static_cast<std::size_t>(
                g.uniform(2, static_cast<int>(changes.size()) - 2))];
            const sys_seconds a = change.first - minutes{g.uniform(1, 30 * 60)};
            const sys_seconds b = change.first + minutes{g.uniform(1, 30 * 60)};
            const auto e = random_expression(g);
            const auto s = cron::schedule::parse(e.text(), name);
            const auto want = reference(e, zone_at, a, b);
            const auto got = answers(s, a, b);
            fired += want.size();
            BOOST_TEST_REQUIRE(got == want, "seed " << seed << ": \"" << e.text() << "\" in "
                                                    << name << " from " << date::format("%FT%TZ", a)
                                                    << " to " << date::format("%FT%TZ", b)
                                                    << "\n want " << show(want) << "\n got  "
                                                    << show(got));
        }
    }
    BOOST_TEST(fired > 100u);
}
