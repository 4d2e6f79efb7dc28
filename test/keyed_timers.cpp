#define BOOST_TEST_MODULE keyed_timers
#include <timewheel/keyed_timers.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <test/support/allocation_counter.hpp>

namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using timewheel::test::allocation_counter;

struct firing {
    int key;
    std::string value;
    clock_type::time_point at;
};

// A keyed_timers<int, std::string> that records what fires.
struct fixture {
    net::io_context io;
    std::vector<firing> fired;
    std::function<void(const int&, std::string&)> extra; // runs after recording, if set
    timewheel::keyed_timers<int, std::string> tw{io, [this](const int& k, std::string& v) {
                                                     fired.push_back({k, v, clock_type::now()});
                                                     if (extra) {
                                                         extra(k, v);
                                                     }
                                                 }};

    std::vector<int> keys() const {
        std::vector<int> out;
        for (const firing& f : fired) {
            out.push_back(f.key);
        }
        return out;
    }
};

std::vector<int> list(std::initializer_list<int> values) {
    return values;
}

} // namespace

BOOST_AUTO_TEST_CASE(set_fires_once_with_its_value_never_early) {
    fixture f;
    const auto before = clock_type::now();
    f.tw.set_timer(1, "one", 20ms);
    BOOST_TEST(f.tw.size() == 1u);
    BOOST_TEST(f.tw.contains(1));
    BOOST_TEST(f.fired.empty()); // never from inside set_timer
    f.io.run();
    BOOST_REQUIRE_EQUAL(f.fired.size(), 1u);
    BOOST_TEST(f.fired[0].key == 1);
    BOOST_TEST(f.fired[0].value == "one");
    BOOST_TEST((f.fired[0].at >= before + 20ms));
    BOOST_TEST(f.tw.size() == 0u);
    BOOST_TEST(!f.tw.contains(1));
}

BOOST_AUTO_TEST_CASE(zero_and_negative_delays_are_due_now_but_not_inline) {
    fixture f;
    f.tw.set_timer(1, "zero", 0ms);
    f.tw.set_timer(2, "negative", -5s);
    BOOST_TEST(f.fired.empty());
    f.io.run();
    BOOST_TEST(f.fired.size() == 2u);
}

BOOST_AUTO_TEST_CASE(set_twice_replaces_value_and_deadline_earlier) {
    fixture f;
    f.tw.set_timer(1, "first", 2s);
    f.tw.set_timer(2, "other", 200ms);
    f.tw.set_timer(1, "second", 10ms);
    BOOST_TEST(f.tw.size() == 2u);
    f.io.run();
    BOOST_TEST(f.keys() == list({1, 2}));
    BOOST_TEST(f.fired[0].value == "second");
}

BOOST_AUTO_TEST_CASE(set_twice_replaces_value_and_deadline_later) {
    fixture f;
    const auto before = clock_type::now();
    f.tw.set_timer(1, "first", 10ms);
    f.tw.set_timer(2, "other", 50ms);
    f.tw.set_timer(1, "second", 150ms);
    f.io.run();
    BOOST_TEST(f.keys() == list({2, 1}));
    BOOST_TEST(f.fired[1].value == "second");
    BOOST_TEST((f.fired[1].at >= before + 150ms));
}

BOOST_AUTO_TEST_CASE(move_later_keeps_value_and_never_fires_early) {
    fixture f;
    f.tw.set_timer(1, "one", 10ms);
    f.tw.set_timer(2, "two", 60ms);
    const auto before_move = clock_type::now();
    BOOST_TEST(f.tw.move_timer(1, 150ms));
    BOOST_TEST(f.tw.size() == 2u);
    BOOST_TEST((*f.tw.expiry(1) >= before_move + 150ms));
    f.io.run();
    BOOST_TEST(f.keys() == list({2, 1}));
    BOOST_TEST(f.fired[1].value == "one");
    BOOST_TEST((f.fired[1].at >= before_move + 150ms));
}

BOOST_AUTO_TEST_CASE(move_earlier_relinks) {
    fixture f;
    f.tw.set_timer(1, "one", 5s);
    f.tw.set_timer(2, "two", 150ms);
    BOOST_TEST(f.tw.move_timer(1, 10ms));
    BOOST_TEST((*f.tw.expiry(1) < *f.tw.expiry(2)));
    f.io.run();
    BOOST_TEST(f.keys() == list({1, 2}));
}

BOOST_AUTO_TEST_CASE(move_of_a_missing_key_adds_nothing) {
    fixture f;
    BOOST_TEST(!f.tw.move_timer(7, 10ms));
    BOOST_TEST(!f.tw.move_timer_at(7, clock_type::now()));
    BOOST_TEST(f.tw.size() == 0u);
    BOOST_TEST(!f.tw.expiry(7).has_value());
    f.io.run();
    BOOST_TEST(f.fired.empty());
}

// go-zero #205: a MoveTimer racing with the expiry re-inserted the key.
BOOST_AUTO_TEST_CASE(move_after_expiry_reinserts_nothing) {
    fixture f;
    bool moved_inside = true;
    bool contained_inside = true;
    f.extra = [&](const int& key, std::string&) {
        moved_inside = f.tw.move_timer(key, 10ms);
        contained_inside = f.tw.contains(key);
    };
    f.tw.set_timer(1, "one", 5ms);
    f.io.run();
    BOOST_TEST(f.fired.size() == 1u);
    BOOST_TEST(!moved_inside);
    BOOST_TEST(!contained_inside);
    BOOST_TEST(!f.tw.move_timer(1, 10ms));
    BOOST_TEST(f.tw.size() == 0u);
    f.io.restart();
    f.io.run();
    BOOST_TEST(f.fired.size() == 1u);
}

BOOST_AUTO_TEST_CASE(remove_drops_without_calling_and_destroys_the_value) {
    net::io_context io;
    int calls = 0;
    auto token = std::make_shared<int>(0);
    timewheel::keyed_timers<int, std::shared_ptr<int>> tw(
        io, [&](const int&, std::shared_ptr<int>&) { ++calls; });
    tw.set_timer(1, token, 10ms);
    tw.set_timer(2, token, 20ms);
    BOOST_TEST(token.use_count() == 3);
    BOOST_TEST(tw.remove_timer(1));
    BOOST_TEST(token.use_count() == 2);
    BOOST_TEST(!tw.remove_timer(1));
    BOOST_TEST(!tw.remove_timer(3));
    BOOST_TEST(tw.size() == 1u);
    io.run();
    BOOST_TEST(calls == 1);
    BOOST_TEST(token.use_count() == 1); // destroyed after execute returned
}

BOOST_AUTO_TEST_CASE(drain_visits_every_pending_entry_and_empties) {
    fixture f;
    f.tw.set_timer(1, "one", 1s);
    f.tw.set_timer(2, "two", 2s);
    f.tw.set_timer(3, "three", 0ms);
    std::vector<std::pair<int, std::string>> drained;
    const std::size_t n = f.tw.drain([&](const int& k, std::string& v) {
        drained.emplace_back(k, std::move(v));
        BOOST_TEST(!f.tw.contains(k));
    });
    BOOST_TEST(n == 3u);
    BOOST_TEST(f.tw.size() == 0u);
    std::sort(drained.begin(), drained.end());
    BOOST_REQUIRE_EQUAL(drained.size(), 3u);
    BOOST_TEST(drained[0].second == "one");
    BOOST_TEST(drained[1].second == "two");
    BOOST_TEST(drained[2].second == "three");
    f.io.run(); // nothing armed: returns at once
    BOOST_TEST(f.fired.empty());
    BOOST_TEST(f.tw.drain([](const int&, std::string&) {}) == 0u);
}

BOOST_AUTO_TEST_CASE(drain_callback_may_set_keys_which_are_not_drained) {
    fixture f;
    f.tw.set_timer(1, "one", 1s);
    f.tw.set_timer(2, "two", 1s);
    int calls = 0;
    f.tw.drain([&](const int& k, std::string& v) {
        ++calls;
        f.tw.set_timer(k + 10, v + "-again", 5ms);
    });
    BOOST_TEST(calls == 2);
    BOOST_TEST(f.tw.size() == 2u);
    f.io.run();
    auto keys = f.keys();
    std::sort(keys.begin(), keys.end());
    BOOST_TEST(keys == list({11, 12}));
}

BOOST_AUTO_TEST_CASE(drain_that_throws_drops_the_rest) {
    net::io_context io;
    auto token = std::make_shared<int>(0);
    timewheel::keyed_timers<int, std::shared_ptr<int>> tw(io,
                                                          [](const int&, std::shared_ptr<int>&) {});
    for (int k = 0; k < 5; ++k) {
        tw.set_timer(k, token, 1s);
    }
    int calls = 0;
    BOOST_CHECK_THROW(tw.drain([&](const int&, std::shared_ptr<int>&) {
        if (++calls == 2) {
            throw std::runtime_error("drain");
        }
    }),
                      std::runtime_error);
    BOOST_TEST(calls == 2);
    BOOST_TEST(tw.size() == 0u);
    BOOST_TEST(token.use_count() == 1);
    BOOST_TEST(tw.service().size() == 0u);
}

BOOST_AUTO_TEST_CASE(stop_drops_everything_and_refuses_later_calls) {
    net::io_context io;
    int calls = 0;
    auto token = std::make_shared<int>(0);
    timewheel::keyed_timers<int, std::shared_ptr<int>> tw(
        io, [&](const int&, std::shared_ptr<int>&) { ++calls; });
    tw.set_timer(1, token, 5ms);
    tw.set_timer(2, token, 0ms);
    tw.stop();
    BOOST_TEST(tw.stopped());
    BOOST_TEST(tw.size() == 0u);
    BOOST_TEST(token.use_count() == 1);
    BOOST_TEST(tw.service().size() == 0u);

    const auto says_stopped = [](const char* function) {
        return [function](const std::logic_error& e) {
            const std::string what = e.what();
            return what.find("stopped") != std::string::npos &&
                   what.find(function) != std::string::npos;
        };
    };
    BOOST_CHECK_EXCEPTION(tw.set_timer(3, token, 1ms), std::logic_error, says_stopped("set_timer"));
    BOOST_CHECK_EXCEPTION(tw.set_timer_at(3, token, clock_type::now()), std::logic_error,
                          says_stopped("set_timer_at"));
    BOOST_CHECK_EXCEPTION(tw.move_timer(1, 1ms), std::logic_error, says_stopped("move_timer"));
    BOOST_CHECK_EXCEPTION(tw.remove_timer(1), std::logic_error, says_stopped("remove_timer"));
    BOOST_CHECK_EXCEPTION(tw.drain([](const int&, std::shared_ptr<int>&) {}), std::logic_error,
                          says_stopped("drain"));
    BOOST_TEST(tw.size() == 0u); // the failed calls changed nothing
    BOOST_TEST(token.use_count() == 1);
    tw.stop(); // again: nothing
    io.run();
    BOOST_TEST(calls == 0);
}

BOOST_AUTO_TEST_CASE(execute_may_reset_its_own_key) {
    fixture f;
    int rearms = 0;
    f.extra = [&](const int& key, std::string& value) {
        if (rearms < 3) {
            ++rearms;
            f.tw.set_timer(key, value + "+", 2ms);
            BOOST_TEST(f.tw.contains(key));
        }
    };
    f.tw.set_timer(1, "v", 2ms);
    f.io.run();
    BOOST_TEST(f.keys() == list({1, 1, 1, 1}));
    BOOST_TEST(f.fired.back().value == "v+++");
    BOOST_TEST(f.tw.size() == 0u);
}

BOOST_AUTO_TEST_CASE(execute_may_move_remove_and_stop) {
    fixture f;
    f.extra = [&](const int& key, std::string&) {
        if (key == 1) {
            BOOST_TEST(f.tw.remove_timer(2));
            BOOST_TEST(f.tw.move_timer(3, 1ms));
        } else if (key == 3) {
            f.tw.stop();
        }
    };
    f.tw.set_timer(1, "one", 5ms);
    f.tw.set_timer(2, "two", 100ms);
    f.tw.set_timer(3, "three", 5s);
    f.tw.set_timer(4, "four", 5s);
    f.io.run(); // key 3 stops the wheel, dropping key 4: run() returns
    BOOST_TEST(f.keys() == list({1, 3}));
    BOOST_TEST(f.tw.stopped());
    BOOST_TEST(f.tw.service().size() == 0u);
}

BOOST_AUTO_TEST_CASE(execute_that_throws_propagates_and_the_rest_fire_later) {
    fixture f;
    f.extra = [&](const int& key, std::string&) {
        if (key == 1) {
            throw std::runtime_error("boom");
        }
    };
    f.tw.set_timer(1, "one", 1ms);
    f.tw.set_timer(2, "two", 20ms);
    BOOST_CHECK_THROW(f.io.run(), std::runtime_error);
    BOOST_TEST(!f.tw.contains(1));
    BOOST_TEST(f.tw.contains(2));
    f.io.restart();
    f.io.run();
    BOOST_TEST(f.keys() == list({1, 2}));
}

// go-zero #5510: a delay shorter than the wheel's interval waited a whole rotation.
BOOST_AUTO_TEST_CASE(delay_shorter_than_a_tick_fires_on_the_next_tick) {
    net::io_context io;
    timewheel::wheel_service_options options;
    options.tick = 20ms; // a rotation of level 0 is 64 ticks: 1.28 s
    net::use_service<timewheel::wheel_service>(io).configure(options);
    clock_type::time_point fired_at{};
    timewheel::keyed_timers<int, int> tw(io,
                                         [&](const int&, int&) { fired_at = clock_type::now(); });
    const auto before = clock_type::now();
    tw.set_timer(1, 0, 1ms);
    io.run();
    BOOST_TEST((fired_at >= before + 1ms));
    BOOST_TEST((fired_at < before + 640ms)); // generous: two ticks are 40 ms
}

// go-zero #3619: ticks missed while the goroutine was blocked were lost.
BOOST_AUTO_TEST_CASE(missed_ticks_are_caught_up_in_deadline_order) {
    fixture f;
    const auto start = clock_type::now();
    std::vector<clock_type::time_point> deadlines;
    for (int k = 1; k <= 10; ++k) {
        f.tw.set_timer(11 - k, "v", (11 - k) * 10ms); // set out of order
    }
    for (int k = 1; k <= 10; ++k) {
        deadlines.push_back(*f.tw.expiry(k));
    }
    clock_type::time_point unblocked{};
    net::post(f.io, [&] {
        std::this_thread::sleep_for(150ms); // the io thread is blocked past every deadline
        unblocked = clock_type::now();
    });
    f.io.run();
    BOOST_TEST(f.keys() == list({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
    for (std::size_t i = 0; i < f.fired.size(); ++i) {
        BOOST_TEST((f.fired[i].at >= deadlines[i]));
        BOOST_TEST((f.fired[i].at >= start + (static_cast<int>(i) + 1) * 10ms));
        BOOST_TEST((f.fired[i].at < unblocked + 1s)); // generous
    }
}

BOOST_AUTO_TEST_CASE(string_keys_are_found_by_string_view_without_allocating) {
    net::io_context io;
    std::vector<std::string> fired;
    timewheel::keyed_timers<std::string, int> tw(
        io, [&](const std::string& k, int&) { fired.push_back(k); });
    const std::string long_key(64, 'k'); // beyond the small-string buffer
    tw.set_timer(long_key, 1, 10ms);
    tw.set_timer("short", 2, 1s);
    const std::string_view view(long_key);
    std::size_t allocated = 0;
    bool found = false;
    bool moved = false;
    {
        allocation_counter counter;
        found = tw.contains(view);
        moved = tw.move_timer(view, 20ms); // later: the service's driver is not re-armed
        tw.set_timer(view, 3, 30ms);       // existing key: replaces, converts nothing
        allocated = counter.count();
    }
    BOOST_TEST(found);
    BOOST_TEST(moved);
    BOOST_TEST(allocated == 0u);
    BOOST_TEST(tw.size() == 2u);
    BOOST_TEST(tw.remove_timer("short"));
    BOOST_TEST(!tw.contains(std::string_view("short")));
    io.run();
    BOOST_TEST(fired == std::vector<std::string>{long_key});
}

BOOST_AUTO_TEST_CASE(bad_construction_arguments_are_named) {
    net::io_context io;
    const auto names = [](const char* argument) {
        return [argument](const std::invalid_argument& e) {
            return std::string(e.what()).find(argument) != std::string::npos;
        };
    };
    using tw_type = timewheel::keyed_timers<int, int>;
    BOOST_CHECK_EXCEPTION(tw_type(io, tw_type::execute_function{}), std::invalid_argument,
                          names("execute"));
    BOOST_CHECK_EXCEPTION(tw_type(
                              io, [](const int&, int&) {}, -1ms),
                          std::invalid_argument, names("slack"));
}

BOOST_AUTO_TEST_CASE(constructed_from_an_executor_with_slack) {
    net::io_context io;
    int calls = 0;
    timewheel::keyed_timers<int, int> tw(
        io.get_executor(), [&](const int&, int&) { ++calls; }, 50ms);
    BOOST_TEST((tw.slack() == 50ms));
    BOOST_TEST(&tw.service() == &net::use_service<timewheel::wheel_service>(io));
    const auto before = clock_type::now();
    tw.set_timer(1, 1, 10ms);
    io.run();
    BOOST_TEST(calls == 1);
    BOOST_TEST((clock_type::now() >= before + 10ms));
}

BOOST_AUTO_TEST_CASE(destroying_the_wheel_drops_entries_without_calling) {
    net::io_context io;
    int calls = 0;
    auto token = std::make_shared<int>(0);
    {
        timewheel::keyed_timers<int, std::shared_ptr<int>> tw(
            io, [&](const int&, std::shared_ptr<int>&) { ++calls; });
        for (int k = 0; k < 100; ++k) {
            tw.set_timer(k, token, 1ms);
        }
    }
    BOOST_TEST(token.use_count() == 1);
    BOOST_TEST(net::use_service<timewheel::wheel_service>(io).size() == 0u);
    io.run();
    BOOST_TEST(calls == 0);
}

BOOST_AUTO_TEST_CASE(io_context_shutdown_drops_entries_without_calling) {
    int calls = 0;
    auto token = std::make_shared<int>(0);
    auto io = std::make_unique<net::io_context>();
    timewheel::keyed_timers<int, std::shared_ptr<int>> tw(
        *io, [&](const int&, std::shared_ptr<int>&) { ++calls; });
    for (int k = 0; k < 10; ++k) {
        tw.set_timer(k, token, 1h);
    }
    io.reset(); // shutdown, then the services are destroyed
    BOOST_TEST(calls == 0);
    BOOST_TEST(tw.size() == 0u);
    BOOST_TEST(token.use_count() == 1);
} // tw is destroyed after its io_context: it has nothing left to cancel

BOOST_AUTO_TEST_CASE(steady_churn_on_a_warm_wheel_allocates_nothing) {
    net::io_context io;
    std::size_t fired = 0;
    int rearmed = 0;
    timewheel::keyed_timers<int, std::string>* self = nullptr;
    const std::string value = "short"; // fits the small-string buffer: the value allocates nothing
    timewheel::keyed_timers<int, std::string> tw(io, [&](const int& key, std::string&) {
        ++fired;
        if (key % 7 == 0 && rearmed++ % 2 == 0) {
            self->set_timer(key, value, 0ms); // re-arm itself once in a while
        }
    });
    self = &tw;
    const auto round = [&] {
        for (int k = 0; k < 200; ++k) {
            tw.set_timer(k, value, 1ms);
        }
        for (int k = 0; k < 200; k += 3) {
            tw.move_timer(k, 2ms); // later: lazy
        }
        for (int k = 0; k < 200; k += 5) {
            tw.remove_timer(k);
        }
        for (int k = 0; k < 200; k += 10) {
            tw.set_timer(k, value, 0ms);
        }
        for (int k = 1; k < 200; k += 4) {
            tw.move_timer(k, 0ms); // earlier: relinked
        }
        io.restart();
        io.run();
    };
    for (int i = 0; i < 5; ++i) {
        round(); // warm: the pool, the buckets, Asio's recycled operations
    }
    fired = 0;
    std::size_t allocated = 0;
    {
        allocation_counter counter;
        for (int i = 0; i < 20; ++i) {
            round();
        }
        allocated = counter.count();
    }
    BOOST_TEST(allocated == 0u);
    BOOST_TEST(fired >= 20u * 180u); // the churn did fire (200 set, 40 removed, 20 re-set)
    BOOST_TEST(tw.size() == 0u);
}

BOOST_AUTO_TEST_CASE(many_keys_grow_the_table_and_each_fires_once) {
    net::io_context io;
    constexpr int keys = 50'000; // the slot array grows past 2 MiB (huge-page blocks)
    std::vector<int> fired(keys, 0);
    timewheel::keyed_timers<int, int> tw(io, [&](const int& k, int& v) {
        BOOST_REQUIRE(v == k * 3);
        ++fired[static_cast<std::size_t>(k)];
    });
    std::mt19937 rng(7);
    for (int k = 0; k < keys; ++k) {
        tw.set_timer(k, k * 3, std::chrono::microseconds(rng() % 20'000));
    }
    BOOST_TEST(tw.size() == static_cast<std::size_t>(keys));
    for (int k = 0; k < keys; k += 2) {
        BOOST_TEST(tw.remove_timer(k));
    }
    BOOST_TEST(tw.size() == static_cast<std::size_t>(keys / 2));
    io.run();
    for (int k = 0; k < keys; ++k) {
        BOOST_TEST_REQUIRE(fired[static_cast<std::size_t>(k)] == (k % 2 == 0 ? 0 : 1));
    }
    BOOST_TEST(tw.size() == 0u);
}

BOOST_AUTO_TEST_CASE(reserve_then_fill_allocates_nothing) {
    net::io_context io;
    timewheel::keyed_timers<int, int> tw(io, [](const int&, int&) {});
    tw.reserve(10'000);
    tw.set_timer(-1, 0, 1h); // the service's own first allocations (its driver)
    std::size_t allocated = 0;
    {
        allocation_counter counter;
        for (int k = 0; k < 10'000; ++k) {
            tw.set_timer(k, k, 1h);
        }
        allocated = counter.count();
    }
    BOOST_TEST(allocated == 0u);
    BOOST_TEST(tw.size() == 10'001u);
}

// With a hash that is not transparent, a lookup by another type converts it to a Key first.
BOOST_AUTO_TEST_CASE(lookups_convert_when_the_hash_is_not_transparent) {
    net::io_context io;
    timewheel::keyed_timers<std::string, int, std::hash<std::string>, std::equal_to<std::string>>
        tw(io, [](const std::string&, int&) {});
    tw.set_timer("alpha", 1, 1h);
    BOOST_TEST(tw.contains("alpha"));
    BOOST_TEST(tw.contains(std::string_view("alpha")));
    BOOST_TEST(tw.move_timer("alpha", 2h));
    BOOST_TEST(!tw.remove_timer("beta"));
    BOOST_TEST(tw.remove_timer(std::string("alpha")));
    BOOST_TEST(tw.size() == 0u);
}

BOOST_AUTO_TEST_CASE(drain_from_inside_drain_is_refused) {
    fixture f;
    f.tw.set_timer(1, "one", 1h);
    f.tw.set_timer(2, "two", 1h);
    int refused = 0;
    f.tw.drain([&](const int&, std::string&) {
        try {
            f.tw.drain([](const int&, std::string&) {});
        } catch (const std::logic_error&) {
            ++refused;
        }
    });
    BOOST_TEST(refused == 2);
    BOOST_TEST(f.tw.size() == 0u);
}

BOOST_AUTO_TEST_CASE(value_assignment_that_throws_leaves_the_entry) {
    struct picky {
        int v = 0;
        picky(int x) // NOLINT(google-explicit-constructor)
            : v(x) {
            if (x < 0) {
                throw std::invalid_argument("value");
            }
        }
    };
    net::io_context io;
    timewheel::keyed_timers<int, picky> tw(io, [](const int&, picky&) {});
    BOOST_CHECK_THROW(tw.set_timer(1, -1, 1h), std::invalid_argument); // new key: not added
    BOOST_TEST(tw.size() == 0u);
    BOOST_TEST(tw.service().size() == 0u);
    tw.set_timer(1, 5, 1h);
    const auto before = *tw.expiry(1);
    BOOST_CHECK_THROW(tw.set_timer(1, -1, 1ms), std::invalid_argument); // existing: unchanged
    BOOST_TEST(tw.size() == 1u);
    BOOST_TEST((*tw.expiry(1) == before));
}

BOOST_AUTO_TEST_CASE(drain_callback_may_stop_the_wheel) {
    net::io_context io;
    auto token = std::make_shared<int>(0);
    timewheel::keyed_timers<int, std::shared_ptr<int>>* self = nullptr;
    timewheel::keyed_timers<int, std::shared_ptr<int>> tw(io,
                                                          [](const int&, std::shared_ptr<int>&) {});
    self = &tw;
    for (int k = 0; k < 20; ++k) {
        tw.set_timer(k, token, 1h);
    }
    const std::size_t drained = tw.drain([&](const int&, std::shared_ptr<int>&) { self->stop(); });
    BOOST_TEST(drained == 1u);
    BOOST_TEST(tw.stopped());
    BOOST_TEST(tw.size() == 0u);
    BOOST_TEST(token.use_count() == 1);
    BOOST_TEST(tw.service().size() == 0u);
}
