//
// test/wheel.cpp
//
// Unit tests of the core wheel: one test case per rule of its contract, plus edge cases.
// The wheel header comes first to prove that it is self-contained.
//

#define BOOST_TEST_MODULE wheel
#include <timewheel/wheel.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tw = timewheel;
using tw::tick_type;

namespace {

// A wheel entry with a name, recovered by static_cast in the handlers.
struct probe : tw::wheel_entry {
    explicit probe(int i = 0)
        : id(i) {}
    int id;
};

int id_of(tw::wheel_entry& e) {
    return static_cast<probe&>(e).id;
}

// One firing: which probe, and the wheel's now() when its handler ran.
struct shot {
    int id;
    tick_type tick;
    friend bool operator==(const shot&, const shot&) = default;
    friend std::ostream& operator<<(std::ostream& os, const shot& s) {
        return os << '{' << s.id << '@' << s.tick << '}';
    }
};
using shots = std::vector<shot>;

// A handler that records every firing and checks that the entry is already disarmed.
struct recorder {
    tw::wheel& w;
    shots log{};
    void operator()(tw::wheel_entry& e) {
        BOOST_TEST(!e.armed());
        log.push_back({id_of(e), w.now()});
    }
};

constexpr tick_type pow64(unsigned n) {
    return tick_type{1} << (6 * n);
}
// A level of the wheel has 256 slots: slot boundaries are powers of 256.
constexpr tick_type pow256(unsigned n) {
    return tick_type{1} << (8 * n);
}
constexpr tick_type never = std::numeric_limits<tick_type>::max();
constexpr tick_type max_tick = std::numeric_limits<tick_type>::max();

// next_expiry(), with `never` for an empty wheel (std::optional is not printable).
tick_type expiry(const tw::wheel& w) {
    return w.next_expiry().value_or(never);
}

tw::wheel_options with_levels(unsigned levels) {
    tw::wheel_options options;
    options.levels = levels;
    return options;
}

// Exception predicate: the message names `word`.
auto names(std::string word) {
    return [word](const std::exception& e) {
        return std::string(e.what()).find(word) != std::string::npos;
    };
}

} // namespace

BOOST_AUTO_TEST_CASE(entry_is_32_bytes) {
    BOOST_TEST_MESSAGE("sizeof(wheel_entry) = " << sizeof(tw::wheel_entry));
#if defined(__x86_64__)
    BOOST_TEST(sizeof(tw::wheel_entry) == 32u);
#else
    BOOST_TEST(sizeof(tw::wheel_entry) <= 4 * sizeof(void*));
#endif
}

BOOST_AUTO_TEST_CASE(default_wheel) {
    tw::wheel w;
    BOOST_TEST(w.now() == 0u);
    BOOST_TEST(w.levels() == 6u);
    BOOST_TEST(w.range() == pow256(6));
    BOOST_TEST(w.empty());
    BOOST_TEST(!w.next_expiry().has_value());
    recorder r{w};
    BOOST_TEST(w.advance(1000, r) == 0u);
    BOOST_TEST(w.now() == 1000u);
    BOOST_TEST(r.log.empty());

    tw::wheel started(123456);
    BOOST_TEST(started.now() == 123456u);
    BOOST_TEST(started.empty());
}

BOOST_AUTO_TEST_CASE(levels_must_be_in_1_to_10) {
    BOOST_TEST(tw::wheel::max_levels == 10u);
    for (const unsigned levels : {0u, 11u, 64u, std::numeric_limits<unsigned>::max()}) {
        BOOST_TEST_CONTEXT("levels " << levels) {
            BOOST_CHECK_EXCEPTION([&] { tw::wheel w(0, with_levels(levels)); }(),
                                  std::invalid_argument, names("levels"));
        }
    }
    for (unsigned levels = 1; levels <= 10; ++levels) { // 9 and 10 work as 8
        BOOST_TEST_CONTEXT("levels " << levels) {
            tw::wheel w(7, with_levels(levels));
            BOOST_TEST(w.levels() == levels);
            BOOST_TEST(w.range() == (levels >= 8 ? max_tick : pow256(levels)));
            BOOST_TEST(w.now() == 7u);
        }
    }
}

BOOST_AUTO_TEST_CASE(entry_accessors) {
    probe a;
    BOOST_TEST(!a.armed());
    BOOST_TEST(a.deadline() == 0u);
    BOOST_TEST(a.slack() == 0u);
    tw::wheel w;
    w.arm(a, 1234, 56);
    BOOST_TEST(a.armed());
    BOOST_TEST(a.deadline() == 1234u);
    BOOST_TEST(a.slack() == 56u);
    BOOST_TEST(w.move(a, 99));
    BOOST_TEST(a.deadline() == 99u);
    BOOST_TEST(a.slack() == 56u);
    w.arm(a, 5);
    BOOST_TEST(a.slack() == 0u);
}

BOOST_AUTO_TEST_CASE(deadline_equal_to_now_is_due_now) {
    tw::wheel w(500);
    probe a(1);
    w.arm(a, 500);
    BOOST_TEST(a.armed());
    BOOST_TEST(!w.empty());
    BOOST_TEST(expiry(w) == 500u);
    recorder r{w};
    BOOST_TEST(w.advance(500, r) == 1u);
    BOOST_TEST(r.log == (shots{{1, 500}}));
    BOOST_TEST(!a.armed());
    BOOST_TEST(w.empty());
}

BOOST_AUTO_TEST_CASE(deadline_in_the_past_fires_at_the_current_tick) {
    tw::wheel w(1000);
    probe a(1), b(2), c(3);
    w.arm(a, 999);
    w.arm(b, 0);
    w.arm(c, 1000);
    BOOST_TEST(expiry(w) == 1000u);
    recorder r{w};
    // The next advance fires them, at the wheel's now(), in the order they were armed.
    BOOST_TEST(w.advance(5000, r) == 3u);
    BOOST_TEST(r.log == (shots{{1, 1000}, {2, 1000}, {3, 1000}}));
    BOOST_TEST(w.now() == 5000u);

    // A target below now() is taken as now(): due entries still fire, now() stays.
    w.arm(a, 3);
    BOOST_TEST(w.advance(10, r) == 1u);
    BOOST_TEST(r.log.back() == (shot{1, 5000}));
    BOOST_TEST(w.now() == 5000u);
}

BOOST_AUTO_TEST_CASE(deadline_one_tick_ahead) {
    tw::wheel w(77);
    probe a(1);
    w.arm(a, 78);
    BOOST_TEST(expiry(w) == 78u);
    recorder r{w};
    BOOST_TEST(w.advance(77, r) == 0u);
    BOOST_TEST(a.armed());
    BOOST_TEST(w.advance(78, r) == 1u);
    BOOST_TEST(r.log == (shots{{1, 78}}));
}

BOOST_AUTO_TEST_CASE(level_boundaries_fire_exactly) {
    const tick_type deltas[] = {1,
                                2,
                                63,
                                64,
                                65,
                                255,
                                256,
                                257,
                                511,
                                512,
                                4095,
                                4096,
                                4097,
                                65535,
                                65536,
                                65537,
                                262144,
                                pow256(3) - 1,
                                pow256(3),
                                pow256(3) + 1,
                                pow256(4) - 1,
                                pow256(4),
                                pow256(4) + 1,
                                pow256(5) - 1,
                                pow256(5),
                                pow256(5) + 1,
                                pow256(6) - 1};
    for (const tick_type start :
         {tick_type{0}, tick_type{1}, tick_type{4095}, tick_type{4096}, tick_type{123456789}}) {
        for (const tick_type delta : deltas) {
            BOOST_TEST_CONTEXT("start " << start << " delta " << delta) {
                tw::wheel w(start);
                probe a(1);
                const tick_type deadline = start + delta;
                w.arm(a, deadline);
                const tick_type next = expiry(w);
                BOOST_TEST(next > start);
                BOOST_TEST(next <= deadline);
                recorder r{w};
                BOOST_TEST(w.advance(deadline - 1, r) == 0u);
                BOOST_TEST(w.now() == deadline - 1);
                BOOST_TEST(a.armed());
                BOOST_TEST(w.advance(deadline, r) == 1u);
                BOOST_TEST(r.log == (shots{{1, deadline}}));
                BOOST_TEST(w.empty());
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(level_boundaries_in_one_wheel_fire_in_order) {
    const tick_type deltas[] = {pow64(6) - 1, 262145, 64,       1,      4096, 262144,   65,
                                4095,         63,     pow64(5), 262143, 4097, pow64(4), 2};
    tw::wheel w(64 * 1000 + 17);
    const tick_type start = w.now();
    std::deque<probe> probes;
    for (const tick_type delta : deltas) {
        probes.emplace_back(static_cast<int>(probes.size()));
        w.arm(probes.back(), start + delta);
    }
    recorder r{w};
    BOOST_TEST(w.advance(start + pow64(6), r) == std::size(deltas));
    shots expected;
    for (const probe& p : probes) {
        expected.push_back({p.id, p.deadline()});
    }
    std::sort(expected.begin(), expected.end(),
              [](const shot& a, const shot& b) { return a.tick < b.tick; });
    BOOST_TEST(r.log == expected);
    BOOST_TEST(w.now() == start + pow64(6));
}

BOOST_AUTO_TEST_CASE(last_tick_of_the_range_and_just_beyond) {
    for (unsigned levels = 1; levels < 8; ++levels) { // 8 levels: the whole tick range
        for (const tick_type start : {tick_type{0}, tick_type{5}, (tick_type{1} << 40) + 3}) {
            BOOST_TEST_CONTEXT("levels " << levels << " start " << start) {
                tw::wheel w(start, with_levels(levels));
                const tick_type last = start + w.range() - 1;
                probe first(1), at_last(2), beyond(3);
                w.arm(at_last, last);
                w.arm(beyond, last + 1);
                w.arm(first, start + 1);
                recorder r{w};
                BOOST_TEST(w.advance(last - 1, r) == 1u);
                BOOST_TEST(r.log == (shots{{1, start + 1}}));
                BOOST_TEST(w.advance(last, r) == 1u);
                BOOST_TEST(r.log == (shots{{1, start + 1}, {2, last}}));
                BOOST_TEST(w.advance(last + 1, r) == 1u);
                BOOST_TEST(r.log == (shots{{1, start + 1}, {2, last}, {3, last + 1}}));
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(deadlines_beyond_the_range_never_fire_early) {
    for (const unsigned levels : {1u, 2u, 3u, 6u}) {
        tw::wheel w(12345, with_levels(levels));
        const tick_type start = w.now();
        const tick_type range = w.range();
        std::deque<probe> probes;
        for (const tick_type k : {1, 2, 3, 7}) {
            for (const tick_type offset : {tick_type{0}, tick_type{1}, range / 2, range - 1}) {
                probes.emplace_back(static_cast<int>(probes.size()));
                w.arm(probes.back(), start + k * range + offset);
            }
        }
        BOOST_TEST_CONTEXT("levels " << levels) {
            // Step to one tick before each deadline, then to the deadline.
            std::vector<tick_type> deadlines;
            for (const probe& p : probes) {
                deadlines.push_back(p.deadline());
            }
            std::sort(deadlines.begin(), deadlines.end());
            recorder r{w};
            std::size_t fired = 0;
            for (const tick_type d : deadlines) {
                BOOST_TEST(w.advance(d - 1, r) == 0u);
                BOOST_TEST_REQUIRE(w.advance(d, r) == 1u);
                ++fired;
                BOOST_TEST_REQUIRE(r.log.size() == fired);
                BOOST_TEST(r.log.back().tick == d);
                BOOST_TEST(probes[static_cast<std::size_t>(r.log.back().id)].deadline() == d);
            }
            BOOST_TEST(w.empty());
        }
    }
}

BOOST_AUTO_TEST_CASE(deadlines_beyond_the_range_fire_exactly_in_one_jump) {
    for (const unsigned levels : {1u, 2u, 3u, 6u}) {
        tw::wheel w(99, with_levels(levels));
        const tick_type start = w.now();
        const tick_type range = w.range();
        std::deque<probe> probes;
        for (const tick_type k : {5, 1, 3, 2}) {
            for (const tick_type offset : {range - 1, tick_type{0}, range / 3, tick_type{1}}) {
                probes.emplace_back(static_cast<int>(probes.size()));
                w.arm(probes.back(), start + k * range + offset);
            }
        }
        BOOST_TEST_CONTEXT("levels " << levels) {
            recorder r{w};
            BOOST_TEST(w.advance(start + 6 * range, r) == probes.size());
            shots expected;
            for (const probe& p : probes) {
                expected.push_back({p.id, p.deadline()});
            }
            std::sort(expected.begin(), expected.end(),
                      [](const shot& a, const shot& b) { return a.tick < b.tick; });
            BOOST_TEST(r.log == expected);
        }
    }
}

// Regression: with now() inside top-level slot i, an entry filed in slot i for the next
// rotation was taken as the earliest slot, hiding earlier top-level slots.
BOOST_AUTO_TEST_CASE(next_rotation_in_the_top_slot_of_now_does_not_hide_earlier_slots) {
    {
        tw::wheel w(10, with_levels(1));
        probe far(1), near(2);
        w.arm(far, 266); // one rotation ahead, in slot 10 = the slot of now
        w.arm(near, 20);
        BOOST_TEST(expiry(w) == 20u);
        recorder r{w};
        BOOST_TEST(w.advance(30, r) == 1u);
        BOOST_TEST(r.log == (shots{{2, 20}}));
        BOOST_TEST(w.advance(266, r) == 1u);
        BOOST_TEST(r.log == (shots{{2, 20}, {1, 266}}));
    }
    {
        tw::wheel w(10);
        probe far(1), near(2);
        w.arm(far, 10 + pow256(6));
        w.arm(near, 3 * pow256(5));
        BOOST_TEST(expiry(w) == 3 * pow256(5));
        recorder r{w};
        BOOST_TEST(w.advance(3 * pow256(5), r) == 1u);
        BOOST_TEST(r.log == (shots{{2, 3 * pow256(5)}}));
        BOOST_TEST(w.advance(20 * pow256(6), r) == 1u);
        BOOST_TEST(r.log == (shots{{2, 3 * pow256(5)}, {1, 10 + pow256(6)}}));
    }
}

BOOST_AUTO_TEST_CASE(one_level_wheel) {
    tw::wheel w(0, with_levels(1));
    BOOST_TEST(w.range() == 256u);
    const tick_type deadlines[] = {1, 5, 255, 256, 257, 300, 511, 512, 1000, 65536 + 7};
    std::deque<probe> probes;
    for (const tick_type d : deadlines) {
        probes.emplace_back(static_cast<int>(d));
        w.arm(probes.back(), d);
    }
    recorder r{w};
    for (tick_type t = 0; t <= 70000; ++t) {
        w.advance(t, r);
        BOOST_TEST(w.now() == t);
    }
    shots expected;
    for (const tick_type d : deadlines) {
        expected.push_back({static_cast<int>(d), d});
    }
    BOOST_TEST(r.log == expected);
}

BOOST_AUTO_TEST_CASE(eight_level_wheel) {
    tw::wheel w(7, with_levels(8));
    BOOST_TEST(w.range() == max_tick);
    const tick_type deadlines[] = {8,
                                   256,
                                   pow256(5) + 3,
                                   pow256(7),
                                   tick_type{1} << 61,
                                   255 * pow256(7) + 5,
                                   max_tick - 1,
                                   max_tick}; // the last tick
    std::deque<probe> probes;
    for (const tick_type d : deadlines) {
        probes.emplace_back(static_cast<int>(probes.size()));
        w.arm(probes.back(), d);
    }
    recorder r{w};
    BOOST_TEST(w.advance(max_tick, r) == std::size(deadlines));
    shots expected;
    for (const probe& p : probes) {
        expected.push_back({p.id, p.deadline()});
    }
    BOOST_TEST(r.log == expected);
    BOOST_TEST(w.now() == max_tick);
}

// Issue 11, defect 4: deadlines were clamped to 2^62 ticks, so that an entry armed beyond
// it read back another deadline() and fired early, at 2^62. Every tick is a deadline now.
BOOST_AUTO_TEST_CASE(deadlines_at_the_top_of_the_tick_range_never_fire_early) {
    struct scenario {
        unsigned levels;
        tick_type start;
        std::vector<tick_type> deadlines;
    };
    const tick_type two62 = tick_type{1} << 62;
    const std::vector<tick_type> around_2_62 = {two62 - 1,        two62,       two62 + 1,
                                                two62 + 255,      two62 + 256, two62 + pow256(2),
                                                two62 + (1 << 20)};
    const std::vector<tick_type> at_the_top = {max_tick - (1 << 20), max_tick - pow256(2),
                                               max_tick - 256,       max_tick - 255,
                                               max_tick - 1,         max_tick};
    std::vector<scenario> scenarios;
    for (const unsigned levels : {1u, 2u, 3u, 6u, 8u, 10u}) {
        scenarios.push_back({levels, two62 - 1000, around_2_62});
        scenarios.push_back({levels, max_tick - (1 << 21), at_the_top}); // up to 2^13 ranges
        scenarios.push_back({levels, max_tick - 300, {max_tick - 256, max_tick - 1, max_tick}});
    }
    for (const scenario& sc : scenarios) {
        BOOST_TEST_CONTEXT("levels " << sc.levels << " start " << sc.start) {
            tw::wheel w(sc.start, with_levels(sc.levels));
            std::deque<probe> probes;
            for (const tick_type d : sc.deadlines) {
                probes.emplace_back(static_cast<int>(probes.size()));
                w.arm(probes.back(), d);
                BOOST_TEST(probes.back().deadline() == d); // read back as armed
            }
            BOOST_TEST(expiry(w) <= sc.deadlines.front());
            recorder r{w};
            // Step to one tick before each deadline, then to the deadline.
            for (std::size_t i = 0; i < sc.deadlines.size(); ++i) {
                const tick_type d = sc.deadlines[i];
                BOOST_TEST(w.advance(d - 1, r) == 0u);
                BOOST_TEST_REQUIRE(w.advance(d, r) == 1u);
                BOOST_TEST(r.log.back() == (shot{static_cast<int>(i), d}));
            }
            BOOST_TEST(w.empty());
        }
    }
}

BOOST_AUTO_TEST_CASE(the_largest_tick_is_a_deadline_and_a_time) {
    for (const unsigned levels : {1u, 6u, 8u}) {
        BOOST_TEST_CONTEXT("levels " << levels) {
            tw::wheel w(max_tick - 10, with_levels(levels));
            probe exact(1), slack(2), rounded(3), later(4);
            w.arm(exact, max_tick);
            w.arm(slack, max_tick - 5, 1000);        // rounding up would pass the largest tick
            w.arm(rounded, max_tick - 300 + 1, 255); // rounds up to max_tick - 255 (< now: due)
            w.arm(later, max_tick - 8);
            BOOST_TEST(w.move(later, max_tick - 2)); // lazily later
            BOOST_TEST(slack.deadline() == max_tick - 5);
            recorder r{w};
            BOOST_TEST(w.advance(max_tick - 6, r) == 1u);
            BOOST_TEST(r.log == (shots{{3, max_tick - 10}}));
            BOOST_TEST(w.advance(max_tick - 1, r) == 2u);
            BOOST_TEST(r.log.at(1) == (shot{2, max_tick - 5}));
            BOOST_TEST(r.log.at(2) == (shot{4, max_tick - 2}));
            BOOST_TEST(w.advance(max_tick, r) == 1u);
            BOOST_TEST(r.log.back() == (shot{1, max_tick}));
            BOOST_TEST(w.now() == max_tick);
            // At the largest tick, every deadline is due now.
            w.arm(exact, max_tick);
            w.arm(slack, 5, 70000);
            BOOST_TEST(expiry(w) == max_tick);
            BOOST_TEST(w.advance(max_tick, r) == 2u);
            BOOST_TEST(w.empty());
        }
    }
}

BOOST_AUTO_TEST_CASE(start_near_2_pow_40) {
    const tick_type deltas[] = {1, 63, 64, 4096, 262144, 262145, pow64(6) - 1, pow64(6) + 10};
    for (const tick_type start :
         {(tick_type{1} << 40) - 1, tick_type{1} << 40, (tick_type{1} << 40) + 4097 * 64 + 3}) {
        BOOST_TEST_CONTEXT("start " << start) {
            tw::wheel w(start);
            std::deque<probe> probes;
            probes.emplace_back(-1);
            w.arm(probes.back(), start - 10);
            for (const tick_type delta : deltas) {
                probes.emplace_back(static_cast<int>(probes.size()));
                w.arm(probes.back(), start + delta);
            }
            recorder r{w};
            BOOST_TEST(w.advance(start + 2 * pow64(6), r) == probes.size());
            shots expected{{-1, start}};
            for (std::size_t i = 1; i < probes.size(); ++i) {
                expected.push_back({probes[i].id, probes[i].deadline()});
            }
            BOOST_TEST(r.log == expected);
        }
    }
}

BOOST_AUTO_TEST_CASE(move_later_is_lazy_and_fires_at_the_new_deadline) {
    tw::wheel w;
    probe a(1);
    w.arm(a, 100);
    BOOST_TEST(w.move(a, 5000));
    BOOST_TEST(a.armed());
    BOOST_TEST(a.deadline() == 5000u);
    const tick_type next = expiry(w); // may be the old slot: a lower bound only
    BOOST_TEST(next >= 1u);
    BOOST_TEST(next <= 5000u);
    recorder r{w};
    BOOST_TEST(w.advance(100, r) == 0u);
    BOOST_TEST(a.armed());
    BOOST_TEST(w.advance(4999, r) == 0u);
    BOOST_TEST(a.armed());
    BOOST_TEST(w.advance(5000, r) == 1u);
    BOOST_TEST(r.log == (shots{{1, 5000}}));

    // Beyond the range, then back into it.
    w.arm(a, 6000);
    BOOST_TEST(w.move(a, 5000 + 3 * pow64(6) + 17));
    BOOST_TEST(w.advance(5000 + 3 * pow64(6) + 16, r) == 0u);
    BOOST_TEST(w.advance(5000 + 3 * pow64(6) + 17, r) == 1u);
    BOOST_TEST(r.log.back() == (shot{1, 5000 + 3 * pow64(6) + 17}));
}

BOOST_AUTO_TEST_CASE(moved_later_on_every_tick_never_fires_until_left_alone) {
    // A connection re-armed on every read.
    tw::wheel w;
    probe a(1);
    w.arm(a, 1000);
    recorder r{w};
    for (tick_type t = 1; t <= 20000; ++t) {
        BOOST_TEST_REQUIRE(w.advance(t, r) == 0u);
        BOOST_TEST_REQUIRE(w.move(a, t + 1000));
    }
    BOOST_TEST(w.advance(20999, r) == 0u);
    BOOST_TEST(w.advance(30000, r) == 1u);
    BOOST_TEST(r.log == (shots{{1, 21000}}));
}

BOOST_AUTO_TEST_CASE(move_earlier_across_levels) {
    tw::wheel w(1000);
    probe a(1), b(2), c(3), d(4), e(5);
    w.arm(a, 1000 + 300000);
    BOOST_TEST(w.move(a, 1000 + 70));
    w.arm(b, 1000 + 3 * pow64(6) + 5); // beyond the range
    BOOST_TEST(w.move(b, 1000 + 4100));
    w.arm(c, 1000 + 5000);
    BOOST_TEST(w.move(c, 1003));
    w.arm(d, 1000 + 262149);
    BOOST_TEST(w.move(d, 500)); // in the past: due now
    w.arm(e, 1000 + pow64(5) * 7);
    BOOST_TEST(w.move(e, 1000 + pow64(5) * 7 - 1)); // one tick earlier, previous slot
    BOOST_TEST(expiry(w) == 1000u);
    recorder r{w};
    BOOST_TEST(w.advance(1000 + pow64(6), r) == 5u);
    BOOST_TEST(
        r.log ==
        (shots{{4, 1000}, {3, 1003}, {1, 1070}, {2, 1000 + 4100}, {5, 1000 + pow64(5) * 7 - 1}}));
}

BOOST_AUTO_TEST_CASE(move_within_the_same_slot) {
    tw::wheel w;
    probe a(1), b(2), c(3), d(4);
    w.arm(a, 4100); // level 2 slot [4096, 8192)
    BOOST_TEST(w.move(a, 4096));
    w.arm(b, 4100);
    BOOST_TEST(w.move(b, 8191));
    w.arm(c, 10);
    BOOST_TEST(w.move(c, 10));
    w.arm(d, 300000);
    BOOST_TEST(w.move(d, 300001));
    BOOST_TEST(w.move(d, 299999));
    recorder r{w};
    BOOST_TEST(w.advance(400000, r) == 4u);
    BOOST_TEST(r.log == (shots{{3, 10}, {1, 4096}, {2, 8191}, {4, 299999}}));
}

BOOST_AUTO_TEST_CASE(move_of_an_unarmed_entry_returns_false_and_does_nothing) {
    tw::wheel w;
    probe never_armed(1);
    BOOST_TEST(!w.move(never_armed, 10));
    BOOST_TEST(!never_armed.armed());
    BOOST_TEST(never_armed.deadline() == 0u);
    BOOST_TEST(w.empty());

    probe a(2);
    w.arm(a, 5);
    int false_moves = 0;
    BOOST_TEST(w.advance(5, [&](tw::wheel_entry& e) {
        if (!w.move(e, 50)) {
            ++false_moves;
        }
        BOOST_TEST(!e.armed());
    }) == 1u);
    BOOST_TEST(false_moves == 1);
    BOOST_TEST(!a.armed());
    BOOST_TEST(a.deadline() == 5u);
    BOOST_TEST(w.empty());
    BOOST_TEST(!w.move(a, 60));
    BOOST_TEST(w.empty());

    probe cancelled(3);
    w.arm(cancelled, 20);
    BOOST_TEST(w.cancel(cancelled));
    BOOST_TEST(!w.move(cancelled, 30));
    BOOST_TEST(cancelled.deadline() == 20u);

    recorder r{w};
    BOOST_TEST(w.advance(1000, r) == 0u);
    BOOST_TEST(r.log.empty());
}

BOOST_AUTO_TEST_CASE(move_keeps_the_slack) {
    tw::wheel w;
    probe a(1);
    w.arm(a, 1000, 63);
    BOOST_TEST(w.move(a, 5000));
    BOOST_TEST(a.slack() == 63u);
    recorder r{w};
    BOOST_TEST(w.advance(4999, r) == 0u);
    BOOST_TEST(w.advance(5063, r) == 1u);
    BOOST_TEST(r.log.at(0).tick >= 5000u);
    BOOST_TEST(r.log.at(0).tick <= 5063u);
}

BOOST_AUTO_TEST_CASE(cancel_disarms_and_is_idempotent) {
    tw::wheel w(10);
    probe a(1), b(2), unarmed(3);
    BOOST_TEST(!w.cancel(unarmed));
    w.arm(a, 100);
    w.arm(b, 100);
    BOOST_TEST(w.cancel(a));
    BOOST_TEST(!a.armed());
    BOOST_TEST(!w.cancel(a));
    recorder r{w};
    BOOST_TEST(w.advance(1000, r) == 1u);
    BOOST_TEST(r.log == (shots{{2, 100}}));

    // Due now, then cancelled.
    w.arm(a, 5);
    BOOST_TEST(w.cancel(a));
    BOOST_TEST(w.empty());
    // Beyond the range, then cancelled.
    w.arm(a, 5 * pow64(6));
    BOOST_TEST(w.cancel(a));
    BOOST_TEST(w.empty());
    BOOST_TEST(!w.next_expiry().has_value());
    BOOST_TEST(w.advance(10 * pow64(6), r) == 0u);
    BOOST_TEST(r.log.size() == 1u);
}

BOOST_AUTO_TEST_CASE(destroying_an_armed_entry_disarms_it) {
    tw::wheel w(100);
    recorder r{w};
    for (const tick_type deadline :
         {tick_type{0}, tick_type{100}, tick_type{110}, tick_type{300000}, 3 * pow64(6)}) {
        BOOST_TEST_CONTEXT("deadline " << deadline) {
            const tick_type start = w.now();
            std::optional<probe> a(std::in_place, 1);
            w.arm(*a, deadline);
            a.reset();
            BOOST_TEST(w.empty());
            BOOST_TEST(!w.next_expiry().has_value());
            BOOST_TEST(w.advance(start + 5 * pow64(6), r) == 0u);
        }
    }
    // A neighbour in the same slot survives.
    std::optional<probe> a(std::in_place, 1);
    probe b(2);
    w.arm(*a, w.now() + 10);
    w.arm(b, w.now() + 10);
    a.reset();
    BOOST_TEST(!w.empty());
    BOOST_TEST(w.advance(w.now() + 10, r) == 1u);
    BOOST_TEST(r.log == (shots{{2, w.now()}}));
    BOOST_TEST(r.log.size() == 1u);
}

BOOST_AUTO_TEST_CASE(handler_destroys_another_entry_due_in_the_same_tick) {
    for (const tick_type deadline : {tick_type{0} /* due now */, tick_type{100}, tick_type{5000}}) {
        BOOST_TEST_CONTEXT("deadline " << deadline) {
            tw::wheel w(50);
            std::optional<probe> a(std::in_place, 1), b(std::in_place, 2), c(std::in_place, 3),
                d(std::in_place, 4);
            w.arm(*a, deadline);
            w.arm(*b, deadline);
            w.arm(*c, deadline);
            w.arm(*d, std::max<tick_type>(deadline, 50) + 1); // same coarse slot, next tick
            shots log;
            const std::size_t fired = w.advance(100000, [&](tw::wheel_entry& e) {
                const int id = id_of(e);
                log.push_back({id, w.now()});
                if (id == 1) {
                    b.reset();
                    d.reset();
                }
            });
            BOOST_TEST(fired == 2u);
            const tick_type tick = std::max<tick_type>(deadline, 50);
            BOOST_TEST(log == (shots{{1, tick}, {3, tick}}));
            BOOST_TEST(w.empty());
        }
    }
}

BOOST_AUTO_TEST_CASE(handler_destroys_its_own_entry) {
    tw::wheel w;
    std::optional<probe> a(std::in_place, 1);
    probe b(2);
    w.arm(*a, 10);
    w.arm(b, 10);
    shots log;
    BOOST_TEST(w.advance(20, [&](tw::wheel_entry& e) {
        log.push_back({id_of(e), w.now()});
        if (id_of(e) == 1) {
            a.reset(); // e is gone: not touched again
        }
    }) == 2u);
    BOOST_TEST(log == (shots{{1, 10}, {2, 10}}));
    BOOST_TEST(!a.has_value());
}

BOOST_AUTO_TEST_CASE(handler_cancels_another_due_entry) {
    tw::wheel w;
    probe a(1), b(2), c(3), d(4);
    w.arm(a, 100);
    w.arm(b, 100);
    w.arm(c, 100);
    w.arm(d, 150);
    std::vector<int> cancel_results;
    shots log;
    BOOST_TEST(w.advance(1000, [&](tw::wheel_entry& e) {
        log.push_back({id_of(e), w.now()});
        if (id_of(e) == 1) {
            cancel_results.push_back(w.cancel(b)); // due in this tick, not yet fired
            cancel_results.push_back(w.cancel(d)); // due later
            cancel_results.push_back(w.cancel(a)); // itself: already disarmed
        }
        if (id_of(e) == 3) {
            cancel_results.push_back(w.cancel(a)); // fired already
        }
    }) == 2u);
    BOOST_TEST(log == (shots{{1, 100}, {3, 100}}));
    BOOST_TEST(cancel_results == (std::vector<int>{1, 1, 0, 0}));
    BOOST_TEST(w.empty());
}

BOOST_AUTO_TEST_CASE(handler_moves_other_entries) {
    tw::wheel w;
    probe a(1), b(2), c(3);
    w.arm(a, 100);
    w.arm(b, 100);
    w.arm(c, 300);
    shots log;
    BOOST_TEST(w.advance(1000, [&](tw::wheel_entry& e) {
        log.push_back({id_of(e), w.now()});
        if (id_of(e) == 1) {
            BOOST_TEST(w.move(b, 150)); // due in this tick: later
            BOOST_TEST(w.move(c, 120)); // earlier
        }
    }) == 3u);
    BOOST_TEST(log == (shots{{1, 100}, {3, 120}, {2, 150}}));
}

BOOST_AUTO_TEST_CASE(handler_arms_entries_due_now_and_later) {
    tw::wheel w;
    probe a(1), b(2), c(3), d(4), x(5);
    w.arm(a, 100);
    w.arm(x, 100);
    shots log;
    BOOST_TEST(w.advance(200, [&](tw::wheel_entry& e) {
        log.push_back({id_of(e), w.now()});
        if (id_of(e) == 1) {
            w.arm(b, 50);  // in the past: due now, this advance, this tick
            w.arm(c, 100); // now: this tick
            w.arm(d, 101); // next tick: this advance
        }
    }) == 5u);
    BOOST_TEST(log == (shots{{1, 100}, {5, 100}, {2, 100}, {3, 100}, {4, 101}}));
    BOOST_TEST(w.now() == 200u);
}

BOOST_AUTO_TEST_CASE(periodic_entry_rearms_itself) {
    for (const tick_type period : {tick_type{7}, tick_type{64}, tick_type{100000}}) {
        BOOST_TEST_CONTEXT("period " << period) {
            tw::wheel w(3);
            probe p(1);
            w.arm(p, 3 + period);
            int count = 0;
            shots log;
            const std::size_t fired = w.advance(3 + 100 * period, [&](tw::wheel_entry& e) {
                log.push_back({id_of(e), w.now()});
                if (++count < 10) {
                    BOOST_TEST(!e.armed());
                    w.arm(e, w.now() + period);
                    BOOST_TEST(e.armed());
                }
            });
            BOOST_TEST(fired == 10u);
            shots expected;
            for (tick_type i = 1; i <= 10; ++i) {
                expected.push_back({1, 3 + i * period});
            }
            BOOST_TEST(log == expected);
            BOOST_TEST(!p.armed());
        }
    }
    // Re-armed for now() inside its handler: fires again in the same advance, same tick.
    tw::wheel w;
    probe p(1);
    w.arm(p, 5);
    int count = 0;
    shots log;
    BOOST_TEST(w.advance(10, [&](tw::wheel_entry& e) {
        log.push_back({id_of(e), w.now()});
        if (++count < 3) {
            w.arm(e, w.now());
        }
    }) == 3u);
    BOOST_TEST(log == (shots{{1, 5}, {1, 5}, {1, 5}}));
}

BOOST_AUTO_TEST_CASE(fifo_among_entries_of_the_same_tick) {
    tw::wheel w;
    std::deque<probe> probes;
    const tick_type deadline = 300000;
    auto arm_some = [&](int n) {
        for (int i = 0; i < n; ++i) {
            probes.emplace_back(static_cast<int>(probes.size()));
            w.arm(probes.back(), deadline);
        }
    };
    recorder r{w};
    arm_some(25); // level 3
    w.advance(1000, r);
    arm_some(25);
    w.advance(290000, r); // level 2 now
    arm_some(25);
    w.advance(deadline - 10, r); // level 0 now
    arm_some(25);
    BOOST_TEST(r.log.empty());
    BOOST_TEST(w.advance(deadline, r) == 100u);
    shots expected;
    for (int i = 0; i < 100; ++i) {
        expected.push_back({i, deadline});
    }
    BOOST_TEST(r.log == expected);
}

BOOST_AUTO_TEST_CASE(fifo_among_exact_and_slack_entries_of_the_same_deadline) {
    tw::wheel w;
    probe a(1), b(2), c(3), d(4), e(5);
    w.arm(a, 4096, 4095); // a multiple of 256: fires in place at level 1
    w.arm(b, 4096);
    w.arm(c, 4096, 255);
    w.arm(d, 4000, 4095); // rounds up to 4096: the same tick, another deadline
    w.arm(e, 4096, 1);
    recorder r{w};
    BOOST_TEST(w.advance(10000, r) == 5u);
    std::vector<int> of_4096;
    for (const auto& [id, at] : r.log) {
        BOOST_TEST(at == 4096u);
        if (id != 4) {
            of_4096.push_back(id);
        }
    }
    BOOST_TEST(of_4096 == (std::vector<int>{1, 2, 3, 5}));
}

// Entries that fire in place in one slot above level 0 (rounded up by their slack) are
// spread over the slot's lists by deadline, so that the slot's walk is not one chain;
// each deadline's entries still fire in arm order.
BOOST_AUTO_TEST_CASE(fifo_per_deadline_among_many_slack_entries_of_one_slot) {
    tw::wheel w;
    std::deque<probe> probes;
    for (int i = 0; i < 400; ++i) {
        probes.emplace_back(i);
        w.arm(probes.back(), 65536 - 255 + static_cast<tick_type>(i % 40), 255);
    }
    recorder r{w};
    BOOST_TEST(w.advance(70000, r) == 400u);
    std::vector<int> last(40, -1);
    for (const auto& [id, at] : r.log) {
        BOOST_TEST(at == 65536u);
        BOOST_TEST(id > last[static_cast<std::size_t>(id % 40)]);
        last[static_cast<std::size_t>(id % 40)] = id;
    }
}

BOOST_AUTO_TEST_CASE(rearming_counts_as_a_fresh_arm) {
    tw::wheel w;
    probe a(1), b(2), c(3);
    w.arm(a, 5000);
    w.arm(b, 5000);
    w.arm(c, 5000);
    w.arm(a, 5000);
    recorder r{w};
    BOOST_TEST(w.advance(5000, r) == 3u);
    BOOST_TEST(r.log == (shots{{2, 5000}, {3, 5000}, {1, 5000}}));
}

// Regression: entries spliced out of a coarse slot were re-filed lazily from the run queue,
// after handlers of the same slot had run; an entry armed by such a handler for the same
// tick went in front of an entry armed before it.
BOOST_AUTO_TEST_CASE(fifo_holds_for_entries_armed_while_a_slot_cascades) {
    {
        tw::wheel w;
        probe x(1), a(2), b(3);
        w.arm(x, 64); // x and a share the level-1 slot [64, 128)
        w.arm(a, 100);
        shots log;
        BOOST_TEST(w.advance(200, [&](tw::wheel_entry& e) {
            log.push_back({id_of(e), w.now()});
            if (id_of(e) == 1) {
                w.arm(b, 100);
            }
        }) == 3u);
        BOOST_TEST(log == (shots{{1, 64}, {2, 100}, {3, 100}}));
    }
    {
        // The same through a budget cut.
        tw::wheel w;
        probe x1(1), x2(2), a(3), b(4);
        w.arm(x1, 64);
        w.arm(x2, 64);
        w.arm(a, 100);
        recorder r{w};
        BOOST_TEST(w.advance(200, 1, r) == 1u);
        BOOST_TEST(w.now() == 64u);
        w.arm(b, 100);
        BOOST_TEST(w.advance(200, r) == 3u);
        BOOST_TEST(r.log == (shots{{1, 64}, {2, 64}, {3, 100}, {4, 100}}));
    }
    {
        // A one-level wheel: its level 0 is the top level, so the slot that comes due for x
        // also holds a, armed for the same slot one rotation later.
        tw::wheel w(0, with_levels(1));
        probe x(1), a(2), b(3);
        w.arm(x, 5);
        w.arm(a, 5 + 256);
        shots log;
        BOOST_TEST(w.advance(600, [&](tw::wheel_entry& e) {
            log.push_back({id_of(e), w.now()});
            if (id_of(e) == 1) {
                w.arm(b, 5 + 256);
            }
        }) == 3u);
        BOOST_TEST(log == (shots{{1, 5}, {2, 261}, {3, 261}}));
    }
    {
        // The same through a budget cut.
        tw::wheel w(0, with_levels(1));
        probe x1(1), x2(2), a(3), b(4);
        w.arm(x1, 5);
        w.arm(x2, 5);
        w.arm(a, 5 + 256);
        recorder r{w};
        BOOST_TEST(w.advance(600, 1, r) == 1u);
        BOOST_TEST(w.now() == 5u);
        w.arm(b, 5 + 256);
        BOOST_TEST(w.advance(600, r) == 3u);
        BOOST_TEST(r.log == (shots{{1, 5}, {2, 5}, {3, 261}, {4, 261}}));
    }
}

BOOST_AUTO_TEST_CASE(fires_in_order_with_now_equal_to_the_deadline) {
    tw::wheel w(1);
    std::deque<probe> probes;
    std::uint64_t state = 0x9e3779b97f4a7c15u;
    auto next = [&state] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    };
    for (int i = 0; i < 2000; ++i) {
        const unsigned level = static_cast<unsigned>(next() % 7);
        const tick_type d = 1 + next() % pow64(level) + (i % 3 == 0 ? 1000 : 0);
        probes.emplace_back(i);
        w.arm(probes.back(), d);
    }
    shots expected;
    for (const probe& p : probes) {
        expected.push_back({p.id, std::max<tick_type>(p.deadline(), 1)});
    }
    std::stable_sort(expected.begin(), expected.end(),
                     [](const shot& a, const shot& b) { return a.tick < b.tick; });
    recorder r{w};
    BOOST_TEST(w.advance(pow64(7), r) == probes.size());
    BOOST_TEST(r.log == expected);
}

BOOST_AUTO_TEST_CASE(driving_by_next_expiry_fires_everything_exactly) {
    // How a driver uses the wheel: sleep until next_expiry(), advance to it, repeat.
    tw::wheel w(5);
    std::deque<probe> probes;
    for (const tick_type d : {tick_type{6}, tick_type{64}, tick_type{4200}, tick_type{262200},
                              tick_type{99999999}, pow64(6) + 3, 3 * pow64(6) + 1}) {
        probes.emplace_back(static_cast<int>(probes.size()));
        w.arm(probes.back(), d);
    }
    recorder r{w};
    int steps = 0;
    while (const std::optional<tick_type> next = w.next_expiry()) {
        BOOST_TEST_REQUIRE(*next >= w.now());
        // A lower bound of every remaining deadline.
        for (const probe& p : probes) {
            if (p.armed()) {
                BOOST_TEST_REQUIRE(*next <= p.deadline());
            }
        }
        w.advance(*next, r);
        BOOST_TEST_REQUIRE(++steps < 1000);
    }
    shots expected;
    for (const probe& p : probes) {
        expected.push_back({p.id, p.deadline()});
    }
    BOOST_TEST(r.log == expected);
}

BOOST_AUTO_TEST_CASE(advance_to_a_past_target_keeps_now) {
    tw::wheel w(100);
    probe a(1);
    w.arm(a, 200);
    recorder r{w};
    BOOST_TEST(w.advance(5, r) == 0u);
    BOOST_TEST(w.now() == 100u);
    BOOST_TEST(a.armed());
    BOOST_TEST(w.advance(150, r) == 0u);
    BOOST_TEST(w.now() == 150u);
    BOOST_TEST(w.advance(149, r) == 0u);
    BOOST_TEST(w.now() == 150u);
}

BOOST_AUTO_TEST_CASE(now_after_a_complete_advance_is_the_target) {
    tw::wheel w;
    probe a(1), b(2);
    w.arm(a, 10);
    w.arm(b, 5000);
    recorder r{w};
    BOOST_TEST(w.advance(4999, r) == 1u);
    BOOST_TEST(w.now() == 4999u);
    BOOST_TEST(w.advance(5000, r) == 1u);
    BOOST_TEST(w.now() == 5000u);
    BOOST_TEST(w.advance(77777, r) == 0u);
    BOOST_TEST(w.now() == 77777u);
}

BOOST_AUTO_TEST_CASE(budget_of_one_fires_one_per_call_and_resumes_in_order) {
    tw::wheel w;
    const tick_type deadlines[] = {5, 5, 5, 9, 70, 4100, 4100};
    std::deque<probe> probes;
    for (const tick_type d : deadlines) {
        probes.emplace_back(static_cast<int>(probes.size()));
        w.arm(probes.back(), d);
    }
    recorder r{w};
    for (std::size_t i = 0; i < std::size(deadlines); ++i) {
        BOOST_TEST_CONTEXT("call " << i) {
            BOOST_TEST(w.advance(10000, 1, r) == 1u);
            BOOST_TEST(r.log.size() == i + 1);
            BOOST_TEST(r.log.back() == (shot{static_cast<int>(i), deadlines[i]}));
            // Cut by the budget: now() is at a tick being expired, not the target.
            BOOST_TEST(w.now() >= deadlines[i]);
            if (i + 1 < std::size(deadlines)) {
                BOOST_TEST(w.now() <= deadlines[i + 1]);
                BOOST_TEST(expiry(w) <= deadlines[i + 1]);
            }
        }
    }
    BOOST_TEST(w.advance(10000, 1, r) == 0u);
    BOOST_TEST(w.now() == 10000u);
    BOOST_TEST(w.empty());
}

BOOST_AUTO_TEST_CASE(budget_larger_than_the_work) {
    tw::wheel w;
    probe a(1), b(2), c(3);
    w.arm(a, 1);
    w.arm(b, 2);
    w.arm(c, 3);
    recorder r{w};
    BOOST_TEST(w.advance(100, 2, r) == 2u);
    BOOST_TEST(w.advance(100, 2, r) == 1u);
    BOOST_TEST(w.now() == 100u);
    BOOST_TEST(r.log == (shots{{1, 1}, {2, 2}, {3, 3}}));
    w.arm(a, 200);
    BOOST_TEST(w.advance(300, 5, r) == 1u);
    BOOST_TEST(w.now() == 300u);
}

BOOST_AUTO_TEST_CASE(budget_of_zero_throws) {
    tw::wheel w;
    probe a(1);
    w.arm(a, 0);
    recorder r{w};
    BOOST_CHECK_EXCEPTION(w.advance(10, 0, r), std::invalid_argument, names("budget"));
    BOOST_TEST(a.armed());
    BOOST_TEST(w.now() == 0u);
    BOOST_TEST(r.log.empty());
    BOOST_TEST(w.advance(10, r) == 1u);
}

BOOST_AUTO_TEST_CASE(slack_entries_fire_within_their_window) {
    const tick_type slacks[] = {1,
                                5,
                                62,
                                63,
                                64,
                                100,
                                255,
                                256,
                                4095,
                                4096,
                                65535,
                                65536,
                                100000,
                                262143,
                                262144,
                                1u << 30,
                                (tick_type{1} << 32) - 1};
    const tick_type deltas[] = {1, 50, 64, 1000, 5000, 300001, tick_type{1} << 33};
    for (const tick_type start : {tick_type{0}, tick_type{1000003}}) {
        for (const tick_type slack : slacks) {
            for (const tick_type delta : deltas) {
                BOOST_TEST_CONTEXT("start " << start << " slack " << slack << " delta " << delta) {
                    tw::wheel w(start);
                    probe a(1);
                    const tick_type deadline = start + delta;
                    w.arm(a, deadline, slack);
                    BOOST_TEST(a.slack() == slack);
                    BOOST_TEST(a.deadline() == deadline);
                    recorder r{w};
                    BOOST_TEST(w.advance(deadline - 1, r) == 0u);
                    BOOST_TEST(w.advance(deadline + slack, r) == 1u);
                    BOOST_TEST(r.log.at(0).tick >= deadline);
                    BOOST_TEST(r.log.at(0).tick <= deadline + slack);
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(slack_rounds_far_deadlines_to_coarse_ticks) {
    struct expectation {
        tick_type slack;
        tick_type multiple;
    };
    for (const expectation x : {expectation{63, 1}, expectation{255, 256}, expectation{300, 256},
                                expectation{65535, 65536}, expectation{16777215, 16777216}}) {
        BOOST_TEST_CONTEXT("slack " << x.slack) {
            tw::wheel w(12345);
            probe a(1);
            const tick_type deadline = 12345 + 100000003;
            w.arm(a, deadline, x.slack);
            recorder r{w};
            BOOST_TEST(w.advance(deadline + x.slack, r) == 1u);
            const tick_type tick = r.log.at(0).tick;
            BOOST_TEST(tick % x.multiple == 0u);
            BOOST_TEST(tick >= deadline);
            BOOST_TEST(tick <= deadline + x.slack);
        }
    }
}

// Regression: a slack entry armed (or moved) to a deadline at or before now() had its
// deadline rounded up into the future instead of being due now.
BOOST_AUTO_TEST_CASE(slack_entry_with_a_past_deadline_is_due_now) {
    tw::wheel w(1000);
    probe a(1), b(2), c(3), d(4);
    w.arm(a, 990, 255); // 990 rounded up to 256 would be 1024
    w.arm(b, 1000, 4095);
    w.arm(c, 2000, 63);
    BOOST_TEST(w.move(c, 995));
    BOOST_TEST(expiry(w) == 1000u);
    recorder r{w};
    BOOST_TEST(w.advance(1000, r) == 3u);
    BOOST_TEST(r.log == (shots{{1, 1000}, {2, 1000}, {3, 1000}}));

    // Moved within its slot to a deadline that has passed.
    w.arm(d, 1030, 255); // fires at 1280 at the latest
    BOOST_TEST(w.advance(1050, r) == 0u);
    BOOST_TEST(w.move(d, 1040));
    BOOST_TEST(w.advance(1050, r) == 1u);
    BOOST_TEST(r.log.back() == (shot{4, 1050}));
}

BOOST_AUTO_TEST_CASE(next_expiry_reports_due_now_and_a_lower_bound) {
    tw::wheel w(100);
    BOOST_TEST(!w.next_expiry().has_value());
    BOOST_TEST(w.empty());
    probe a(1), b(2), c(3), d(4);
    w.arm(a, 5000);
    BOOST_TEST(!w.empty());
    BOOST_TEST(expiry(w) > 100u);
    BOOST_TEST(expiry(w) <= 5000u);
    w.arm(b, 150);
    BOOST_TEST(expiry(w) > 100u);
    BOOST_TEST(expiry(w) <= 150u);
    w.arm(c, 101);
    BOOST_TEST(expiry(w) == 101u);
    w.arm(d, 50);
    BOOST_TEST(expiry(w) == 100u);
    BOOST_TEST(w.cancel(d));
    BOOST_TEST(expiry(w) == 101u);
    BOOST_TEST(w.cancel(c));
    BOOST_TEST(w.cancel(b));
    BOOST_TEST(w.cancel(a));
    BOOST_TEST(!w.next_expiry().has_value());
    BOOST_TEST(w.empty());
}

BOOST_AUTO_TEST_CASE(move_construction_transfers_the_place) {
    tw::wheel w;
    probe a(1);
    w.arm(a, 300, 5);
    probe b(std::move(a));
    b.id = 2;
    BOOST_TEST(!a.armed());
    BOOST_TEST(b.armed());
    BOOST_TEST(b.deadline() == 300u);
    BOOST_TEST(b.slack() == 5u);
    BOOST_TEST(!w.cancel(a));

    probe unarmed(std::move(a)); // from an unarmed entry
    BOOST_TEST(!unarmed.armed());

    recorder r{w};
    BOOST_TEST(w.advance(400, r) == 1u);
    BOOST_TEST(r.log.at(0).id == 2);
    BOOST_TEST(r.log.at(0).tick >= 300u);
    BOOST_TEST(r.log.at(0).tick <= 305u);

    // Its place among the entries of its tick, and a due-now entry.
    probe p1(11), p2(12), p3(13), due(14);
    w.arm(p1, 500);
    w.arm(p2, 500);
    w.arm(p3, 500);
    w.arm(due, 0);
    probe q(std::move(p2));
    q.id = 15;
    probe due2(std::move(due));
    due2.id = 16;
    r.log.clear();
    BOOST_TEST(w.advance(1000, r) == 4u);
    BOOST_TEST(r.log == (shots{{16, 400}, {11, 500}, {15, 500}, {13, 500}}));
}

BOOST_AUTO_TEST_CASE(move_assignment_transfers_the_place) {
    tw::wheel w;
    probe c(1), d(2), e(3), unarmed(4);
    w.arm(c, 100);
    w.arm(d, 200, 7);
    static_cast<tw::wheel_entry&>(c) = std::move(static_cast<tw::wheel_entry&>(d));
    BOOST_TEST(c.armed());
    BOOST_TEST(c.deadline() == 200u);
    BOOST_TEST(c.slack() == 7u);
    BOOST_TEST(!d.armed());

    // From an unarmed entry: disarms.
    w.arm(e, 50);
    static_cast<tw::wheel_entry&>(e) = std::move(static_cast<tw::wheel_entry&>(unarmed));
    BOOST_TEST(!e.armed());

    // Onto itself: no change.
    tw::wheel_entry& alias = c;
    static_cast<tw::wheel_entry&>(c) = std::move(alias);
    BOOST_TEST(c.armed());

    recorder r{w};
    BOOST_TEST(w.advance(1000, r) == 1u);
    BOOST_TEST(r.log.at(0).id == 1);
    BOOST_TEST(r.log.at(0).tick >= 200u);
    BOOST_TEST(r.log.at(0).tick <= 207u);
    BOOST_TEST(w.empty());
}

BOOST_AUTO_TEST_CASE(catch_up_after_a_huge_jump) {
    // Structural: a jump of 2^50 ticks with a handful of entries completes (a wheel that
    // walked the ticks or the empty slots would not) and fires them in order.
    tw::wheel w(5);
    const tick_type deadlines[] = {6,
                                   1000,
                                   (tick_type{1} << 30) + 7,
                                   pow64(6) + 1,
                                   tick_type{1} << 40,
                                   (tick_type{1} << 45) + 3,
                                   tick_type{1} << 50};
    std::deque<probe> probes;
    for (const tick_type d : deadlines) {
        probes.emplace_back(static_cast<int>(probes.size()));
        w.arm(probes.back(), d);
    }
    recorder r{w};
    const tick_type target = 5 + (tick_type{1} << 50);
    BOOST_TEST(w.advance(target, r) == std::size(deadlines));
    shots expected;
    for (const probe& p : probes) {
        expected.push_back({p.id, p.deadline()});
    }
    BOOST_TEST(r.log == expected);
    BOOST_TEST(w.now() == target);

    // Empty wheel: any jump.
    BOOST_TEST(w.advance(tick_type{1} << 61, r) == 0u);
    BOOST_TEST(w.now() == tick_type{1} << 61);

    // An entry just after a huge jump, armed relative to the new now().
    probe late(99);
    w.arm(late, w.now() + 3);
    BOOST_TEST(w.advance(w.now() + 3, r) == 1u);
    BOOST_TEST(r.log.back() == (shot{99, (tick_type{1} << 61) + 3}));
}

BOOST_AUTO_TEST_CASE(a_throwing_handler_leaves_the_rest_due) {
    tw::wheel w;
    probe a(1), b(2), c(3);
    w.arm(a, 10);
    w.arm(b, 10);
    w.arm(c, 20);
    BOOST_CHECK_THROW(w.advance(100,
                                [&](tw::wheel_entry& e) {
                                    if (id_of(e) == 1) {
                                        throw std::runtime_error("boom");
                                    }
                                }),
                      std::runtime_error);
    BOOST_TEST(!a.armed());
    BOOST_TEST(b.armed());
    BOOST_TEST(c.armed());
    BOOST_TEST(w.now() == 10u);
    recorder r{w};
    BOOST_TEST(w.advance(100, r) == 2u);
    BOOST_TEST(r.log == (shots{{2, 10}, {3, 20}}));
}

BOOST_AUTO_TEST_CASE(destroying_the_wheel_disarms_its_entries) {
    probe a(1), b(2), c(3);
    {
        tw::wheel w(10);
        w.arm(a, 20);
        w.arm(b, 0); // due now
        w.arm(c, 5 * pow64(6));
        BOOST_TEST(a.armed());
    }
    BOOST_TEST(!a.armed());
    BOOST_TEST(!b.armed());
    BOOST_TEST(!c.armed());
}

BOOST_AUTO_TEST_CASE(arming_in_another_wheel_disarms_from_the_first) {
    tw::wheel w1, w2;
    probe a(1);
    w1.arm(a, 10);
    w2.arm(a, 20);
    BOOST_TEST(w1.empty());
    recorder r1{w1}, r2{w2};
    BOOST_TEST(w1.advance(100, r1) == 0u);
    BOOST_TEST(w2.advance(100, r2) == 1u);
    BOOST_TEST(r2.log == (shots{{1, 20}}));
}

// An arm is staged and filed with the next ones (a batch of 16, or when the wheel next
// advances or drains); nothing a user can observe may tell staged and filed entries apart.

BOOST_AUTO_TEST_CASE(staged_entries_answer_next_expiry_as_filed_ones) {
    std::uint64_t seed = 20261126;
    const auto next = [&seed](tick_type bound) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        return (seed >> 17) % bound;
    };
    for (unsigned count = 1; count <= 50; ++count) {
        tw::wheel w(1'000'000 + next(1'000'000));
        std::deque<probe> entries;
        for (unsigned i = 0; i < count; ++i) {
            const tick_type scale = pow256(1 + next(4));
            const tick_type slack = next(4) == 0 ? next(scale) : 0;
            w.arm(entries.emplace_back(static_cast<int>(i)), w.now() + 1 + next(scale), slack);
        }
        const tick_type staged = expiry(w);
        BOOST_TEST(w.advance(w.now(), [](tw::wheel_entry&) {}) == 0u); // files, fires nothing
        BOOST_TEST(expiry(w) == staged, "count " << count);
        // And an entry due now, still staged, makes it now().
        probe due(-1);
        w.arm(due, w.now());
        BOOST_TEST(expiry(w) == w.now());
        BOOST_TEST(w.cancel(due));
        BOOST_TEST(expiry(w) == staged);
    }
}

BOOST_AUTO_TEST_CASE(staged_entries_can_be_cancelled_moved_and_destroyed) {
    tw::wheel w(0);
    probe a(1), b(2), c(3), e(5);
    w.arm(a, 700);
    w.arm(b, 900);
    w.arm(c, 400);
    {
        probe d(4);
        w.arm(d, 300);
    } // destroyed while staged
    w.arm(e, 800);
    BOOST_TEST(w.cancel(a));
    BOOST_TEST(!w.cancel(a));
    BOOST_TEST(w.move(b, 200));  // earlier, still staged
    BOOST_TEST(w.move(c, 1000)); // later, still staged
    probe f(std::move(e));       // takes e's place among the staged entries
    f.id = 6;
    BOOST_TEST(!e.armed());
    recorder r{w};
    BOOST_TEST(w.advance(2000, r) == 3u);
    BOOST_TEST(r.log == (shots{{2, 200}, {6, 800}, {3, 1000}}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(entries_armed_due_by_handlers_fire_in_the_same_advance) {
    // More than a batch of them, armed from handlers while the wheel is advancing.
    tw::wheel w(10);
    std::deque<probe> later;
    for (int i = 0; i < 40; ++i) {
        later.emplace_back(100 + i);
    }
    probe trigger(1);
    w.arm(trigger, 20);
    shots log;
    const std::size_t fired = w.advance(20, [&](tw::wheel_entry& e) {
        log.push_back({id_of(e), w.now()});
        if (id_of(e) == 1) {
            for (probe& p : later) {
                w.arm(p, 5); // in the past: due now
            }
        }
    });
    BOOST_TEST(fired == 41u);
    BOOST_REQUIRE(log.size() == 41u);
    for (int i = 0; i < 40; ++i) {
        BOOST_TEST(log[static_cast<std::size_t>(i) + 1].id == 100 + i); // in arm order
        BOOST_TEST(log[static_cast<std::size_t>(i) + 1].tick == 20u);
    }
    BOOST_TEST(w.empty());
}

BOOST_AUTO_TEST_CASE(drain_visits_staged_due_entries_first) {
    tw::wheel w(1000);
    probe a(1), b(2), c(3);
    w.arm(a, 5000);
    w.arm(b, 900); // due now, staged behind a
    w.arm(c, 1500);
    std::vector<int> order;
    BOOST_TEST(w.drain([&](tw::wheel_entry& e) { order.push_back(id_of(e)); }) == 3u);
    BOOST_TEST(order.at(0) == 2);
    BOOST_TEST(w.empty());
    BOOST_TEST(!a.armed());
    BOOST_TEST(!c.armed());
}
