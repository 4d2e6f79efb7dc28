#define BOOST_TEST_MODULE keyed_timers_differential
#include <timewheel/keyed_timers.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <test/support/seed.hpp>

// Random keyed operations on a keyed_timers<std::string, uint64_t>, driven by real time in
// short io_context runs, checked against a reference model (key -> deadline, value):
//
//  * set, move and remove answer as the model does; size() matches after every operation;
//  * every fired key was pending in the model with that value (so each set fires at most
//    once, and never after a remove, a drain or a replacing set), and fired no earlier than
//    its deadline;
//  * when a key fires, no pending key has a deadline more than two ticks (2 ms) earlier;
//  * expiry(key) is the model's deadline rounded up to the 1 ms tick (or, for a key set with
//    a deadline already passed, the wheel's time: it is due now);
//  * drain hands over exactly the model's pending set, while its callback sets, moves and
//    removes keys (new entries, not drained);
//  * at the end every pending key fires (none is lost), then stop() refuses further calls.
//
// The execute function itself sets, moves and removes keys (its own included) at random.
// Each seed runs twice: with the default hash, and with one that puts the 48 keys in 6
// clusters (long probe sequences and backward shifts in the open-addressing table).
// TIMEWHEEL_SEED selects the run; a failure names the seed and the operation number.

namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr int key_count = 48;
constexpr int operations = 8000;
constexpr auto order_tolerance = 2ms; // two ticks
constexpr auto lateness_bound = 5s;   // generous: the driver runs the io_context in slices

struct pending {
    clock_type::time_point deadline; // never later than the one the wheel was given
    std::uint64_t value;
    bool exact = false;  // given as a time point: the wheel has exactly this deadline
    bool passed = false; // already passed when set: the wheel may file it at its own time
};

// A hash that maps the 48 keys to 6 values: long clusters in the table, so that lookups
// probe far and removals shift many slots back.
struct clustering_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const noexcept { return key.size() % 6; }
};

template <typename Hash>
class differential {
public:
    explicit differential(std::uint64_t seed)
        : seed_(seed)
        , rng_(seed)
        , inner_rng_(seed ^ 0x5bd1e995u)
        , tw_(io_, [this](const std::string& key, std::uint64_t& value) { on_fire(key, value); }) {
        for (int k = 0; k < key_count; ++k) {
            keys_.push_back("key-" + std::to_string(k) + (k % 3 == 0 ? std::string(24, 'x') : ""));
        }
    }

    void run() {
        for (op_ = 0; op_ < operations; ++op_) {
            step();
            expect(tw_.size() == model_.size(), "size() differs from the model");
        }
        // The end: no more random re-arming; everything pending must fire.
        quiet_ = true;
        io_.restart();
        io_.run();
        expect(model_.empty(), "keys were lost: pending in the model, never fired");
        expect(tw_.size() == 0, "size() is not 0 after every key fired");
        tw_.stop();
        bool threw = false;
        try {
            tw_.set_timer(keys_[0], 1u, 1ms);
        } catch (const std::logic_error&) {
            threw = true;
        }
        expect(threw && tw_.size() == 0, "set_timer after stop() did not throw, or changed size");
        std::printf("seed %llu, %s: %llu fired, %llu drained, %d operations\n",
                    static_cast<unsigned long long>(seed_), name_,
                    static_cast<unsigned long long>(fired_),
                    static_cast<unsigned long long>(drained_), operations);
    }

private:
    void expect(bool condition, const std::string& what) {
        if (!condition) {
            std::ostringstream message;
            message << "seed " << seed_ << ", operation " << op_ << ": " << what;
            BOOST_FAIL(message.str());
        }
    }

    int random(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }

    const std::string& key(std::mt19937_64& rng) {
        return keys_[std::uniform_int_distribution<int>(0, key_count - 1)(rng)];
    }

    // Sets, moves or removes a key, mirroring the model. Used by the driver and by execute.
    void mutate(std::mt19937_64& rng, int choice) {
        const std::string& k = key(rng);
        const auto delay =
            std::chrono::microseconds(std::uniform_int_distribution<int>(-2000, 30000)(rng));
        const auto now = clock_type::now();
        const auto deadline = now + delay;
        if (choice < 45) { // set
            const std::uint64_t value = ++values_;
            if (choice % 2 == 0) {
                tw_.set_timer_at(k, value, deadline);
            } else {
                // A std::string_view key: looked up without conversion, converted if new.
                tw_.set_timer(std::string_view(k), value, delay);
            }
            // set_timer reads the clock after `now`: the model's deadline is never later.
            model_[k] = pending{deadline, value, choice % 2 == 0, deadline <= clock_type::now()};
        } else if (choice < 75) { // move
            const bool moved = choice % 2 == 0 ? tw_.move_timer_at(std::string_view(k), deadline)
                                               : tw_.move_timer(k, delay);
            const auto it = model_.find(k);
            expect(moved == (it != model_.end()), "move_timer disagrees with the model on " + k);
            if (it != model_.end()) {
                it->second.deadline = deadline;
                it->second.exact = choice % 2 == 0;
                it->second.passed = false; // a move keeps the deadline given, rounded up
            }
        } else { // remove
            const bool removed = tw_.remove_timer(k.c_str());
            expect(removed == (model_.erase(k) == 1), "remove_timer disagrees with the model");
        }
    }

    void step() {
        const int choice = random(0, 999);
        if (choice < 850) {
            mutate(rng_, choice % 100);
        } else if (choice < 998) {
            io_.restart();
            if (choice % 3 == 0) {
                io_.poll();
            } else {
                io_.run_for(std::chrono::microseconds(random(0, 2000)));
            }
        } else {
            drain();
        }
        for (const std::string& k : keys_) {
            check_expiry(k);
        }
    }

    void check_expiry(const std::string& k) {
        const auto it = model_.find(k);
        const auto expiry = tw_.expiry(std::string_view(k));
        expect(expiry.has_value() == (it != model_.end()), "contains/expiry disagree on " + k);
        if (it != model_.end()) {
            const auto origin = tw_.service().to_time(0);
            const auto low = std::max(it->second.deadline, origin);
            expect(*expiry >= it->second.deadline || it->second.passed,
                   "expiry() is before the deadline");
            expect(!it->second.exact || *expiry < low + 1ms,
                   "expiry() is not the deadline rounded up to the tick");
        }
    }

    // The callback sets, moves and removes keys: those are new entries, never drained.
    void drain() {
        std::map<std::string, std::uint64_t, std::less<>> expected;
        for (const auto& [k, p] : model_) {
            expected.emplace(k, p.value);
        }
        model_.clear();
        const std::size_t n = tw_.drain([&](const std::string& k, std::uint64_t& v) {
            const auto it = expected.find(k);
            expect(it != expected.end() && it->second == v, "drain visited " + k +
                                                                " which was not pending, or "
                                                                "twice, or with a stale value");
            expected.erase(it);
            expect(!tw_.contains(k) || model_.count(k) == 1, "a drained key is still pending");
            if (std::uniform_int_distribution<int>(0, 3)(inner_rng_) == 0) {
                mutate(inner_rng_, std::uniform_int_distribution<int>(0, 99)(inner_rng_));
            }
        });
        expect(expected.empty(), "drain missed pending keys");
        expect(tw_.size() == model_.size(), "size() after drain differs from the model");
        drained_ += n;
    }

    void on_fire(const std::string& k, std::uint64_t value) {
        const auto now = clock_type::now();
        const auto it = model_.find(k);
        expect(it != model_.end(), "fired " + k + ", which is not pending");
        expect(it->second.value == value, "fired " + k + " with a stale value");
        expect(now >= it->second.deadline, "fired " + k + " before its deadline");
        expect(now - it->second.deadline < lateness_bound, "fired " + k + " far too late");
        for (const auto& [other, p] : model_) {
            expect(other == k || p.deadline >= it->second.deadline - order_tolerance,
                   "fired " + k + " while " + other + ", due earlier, was pending");
        }
        expect(!tw_.contains(k), "a firing key is still pending");
        model_.erase(it);
        ++fired_;
        if (quiet_) {
            return;
        }
        const int choice = std::uniform_int_distribution<int>(0, 99)(inner_rng_);
        if (choice < 10) { // re-arm itself
            const std::uint64_t next = ++values_;
            const auto delay =
                std::chrono::microseconds(std::uniform_int_distribution<int>(0, 5000)(inner_rng_));
            const auto now_again = clock_type::now();
            tw_.set_timer(k, next, delay);
            model_[k] =
                pending{now_again + delay, next, false, now_again + delay <= clock_type::now()};
        } else if (choice < 13) {
            expect(!tw_.move_timer(k, 1ms), "move_timer of the firing key reinserted it");
        } else if (choice < 40) {
            mutate(inner_rng_, choice * 3 % 100);
        }
    }

    std::uint64_t seed_;
    std::mt19937_64 rng_;
    std::mt19937_64 inner_rng_;
    net::io_context io_;
    std::vector<std::string> keys_;
    std::map<std::string, pending, std::less<>> model_;
    timewheel::keyed_timers<std::string, std::uint64_t, Hash> tw_;
    std::uint64_t values_ = 0;
    std::uint64_t fired_ = 0;
    std::uint64_t drained_ = 0;
    int op_ = 0;
    bool quiet_ = false;

public:
    const char* name_ = "";
};

} // namespace

BOOST_AUTO_TEST_CASE(random_keyed_operations_match_the_model) {
    const std::uint64_t seed =
        timewheel::test::seed_from_environment("keyed_timers_differential", 1);
    differential<timewheel::default_key_hash<std::string>> spread(seed);
    spread.name_ = "default hash";
    spread.run();
    differential<clustering_hash> clustered(seed);
    clustered.name_ = "clustering hash";
    clustered.run();
}
