//
// test/wheel_differential.cpp
//
// Seeded differential test of the core wheel against a plain reference model.
//
// A pool of entries (std::optional, so that armed entries can be destroyed and re-created)
// goes through a random mix of arm, move earlier/later, move of unarmed entries, cancel,
// destroy, transfer (move construction and assignment) and advance by small, medium and huge
// amounts, sometimes with a budget. Handlers re-enter the wheel: they re-arm themselves and
// arm, move, cancel, destroy or transfer other entries. The model is a multimap keyed by the
// latest tick at which each armed entry may fire, plus a record per entry.
//
// Environment:
//   TIMEWHEEL_SEED    seed to replay (default: random, printed)
//   TIMEWHEEL_OPS     number of operations (default 1,000,000)
//   TIMEWHEEL_LEVELS  levels of the wheel (default: 2, 3, 6 or 8, chosen by the seed); two
//                     more cases always run a one-level and a two-level wheel
//

#define BOOST_TEST_MODULE wheel_differential
#include <timewheel/wheel.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tw = timewheel;
using tw::tick_type;

namespace {

constexpr std::size_t pool_size = 2000;
constexpr tick_type slack_limit = std::numeric_limits<std::uint32_t>::max(); // slack() clamp

std::optional<std::uint64_t> env_number(const char* name) {
    if (const char* text = std::getenv(name); text != nullptr && *text != '\0') {
        return std::stoull(text, nullptr, 0);
    }
    return std::nullopt;
}

struct my_entry : tw::wheel_entry {
    explicit my_entry(std::size_t i)
        : id(i) {}
    std::size_t id;
};

constexpr tick_type max_tick = std::numeric_limits<tick_type>::max();

tick_type saturating_add(tick_type a, tick_type b) {
    return a > std::numeric_limits<tick_type>::max() - b ? std::numeric_limits<tick_type>::max()
                                                         : a + b;
}

// Checks a condition of the run; on failure reports the seed and the operation number.
#define DIFF_CHECK(cond, msg)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::ostringstream diff_check_os_;                                                     \
            diff_check_os_ << "check " #cond " failed: " << msg;                                   \
            fail(diff_check_os_.str());                                                            \
        }                                                                                          \
    } while (false)

class differential {
public:
    differential(std::uint64_t seed, std::uint64_t ops, unsigned levels, tick_type start)
        : seed_(seed)
        , ops_(ops)
        , rng_(seed)
        , wheel_(start, tw::wheel_options{levels})
        , pool_(pool_size)
        , model_(pool_size) {}

    void run();
    std::string stats() const;

    std::uint64_t fires() const { return fires_; }
    std::uint64_t fifo_comparisons() const { return fifo_comparisons_; }
    std::uint64_t cut_advances() const { return cut_advances_; }

private:
    // The model's view of one pool index.
    struct record {
        bool armed = false;
        bool moved = false;      // moved since armed: no FIFO guarantee
        tick_type deadline = 0;  // as given
        tick_type slack = 0;     // as given
        tick_type armed_now = 0; // now() at the last arm or move
        std::uint64_t seq = 0;   // arm sequence number
        std::multimap<tick_type, std::size_t>::iterator where{};
        std::size_t armed_pos = 0; // in armed_
    };

    [[noreturn]] void fail(const std::string& what) const {
        BOOST_FAIL("seed " << seed_ << ", operation " << op_ << " (now " << wheel_.now()
                           << "): " << what);
        std::abort(); // not reached
    }

    std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }
    bool chance(unsigned percent) { return below(100) < percent; }
    std::size_t any_index() { return static_cast<std::size_t>(below(pool_size)); }

    // An index armed in the model, if there is one.
    std::size_t armed_index() {
        return armed_.empty() ? any_index() : armed_[below(armed_.size())];
    }

    // The index most likely due next (often due in the tick being expired), or any.
    std::size_t victim_index() {
        if (!by_latest_.empty() && chance(50)) {
            return by_latest_.begin()->second;
        }
        return armed_index();
    }

    // The latest tick at which an armed entry may fire. A deadline at or before now() at
    // arm (or move) time is due now, slack or not.
    static tick_type latest_of(const record& r) {
        return r.deadline <= r.armed_now ? r.armed_now : saturating_add(r.deadline, r.slack);
    }

    // A range for "huge" amounts: the wheel's range, at most 2^50 (so that a run also
    // reaches beyond the range of the widest wheels). Sums saturate at the largest tick:
    // a run that starts near the top of the tick range arms deadlines up to it.
    tick_type huge() const { return std::min(wheel_.range(), tick_type{1} << 50); }

    tick_type random_deadline();
    tick_type random_slack();
    tick_type random_target();

    void model_rekey(std::size_t i) {
        record& r = model_[i];
        if (r.armed) {
            by_latest_.erase(r.where);
        } else {
            r.armed = true;
            r.armed_pos = armed_.size();
            armed_.push_back(i);
        }
        r.where = by_latest_.emplace(latest_of(r), i);
    }

    void model_disarm(std::size_t i) {
        record& r = model_[i];
        if (r.armed) {
            by_latest_.erase(r.where);
            r.armed = false;
            const std::size_t last = armed_.back();
            armed_[r.armed_pos] = last;
            model_[last].armed_pos = r.armed_pos;
            armed_.pop_back();
        }
    }

    my_entry& entry(std::size_t i) {
        if (!pool_[i]) {
            pool_[i].emplace(i);
            ++counts_.created;
        }
        return *pool_[i];
    }

    void do_arm(std::size_t i, tick_type deadline, tick_type slack);
    void do_move(std::size_t i, tick_type deadline);
    void do_move_earlier(std::size_t i);
    void do_move_later(std::size_t i);
    void do_cancel(std::size_t i);
    void do_destroy(std::size_t i);
    void do_transfer(std::size_t from, std::size_t to);
    void do_advance();
    void on_fire(tw::wheel_entry& e);
    void check_entry(std::size_t i);
    void check_all();

    const std::uint64_t seed_;
    const std::uint64_t ops_;
    std::uint64_t op_ = 0;
    std::mt19937_64 rng_;
    tw::wheel wheel_;
    std::vector<std::optional<my_entry>> pool_;
    std::vector<record> model_;
    std::multimap<tick_type, std::size_t> by_latest_;
    std::vector<std::size_t> armed_; // the indices armed in the model, in no order
    std::uint64_t seq_ = 0;
    tick_type last_deadline_ = 0;

    // State of the advance in progress.
    tick_type target_ = 0;
    std::size_t calls_ = 0;
    // Over the whole run.
    bool any_fired_ = false;
    tick_type last_fire_ = 0;
    bool fifo_valid_ = false;
    tick_type fifo_tick_ = 0;
    // Per FIFO class of the tick fifo_tick_ (exact or due now; or the deadline of an entry
    // with slack), the arm sequence number of the last unmoved entry fired.
    std::map<std::pair<bool, tick_type>, std::uint64_t> fifo_last_;

    std::uint64_t fires_ = 0;
    std::uint64_t fifo_comparisons_ = 0;
    std::uint64_t cut_advances_ = 0;
    std::size_t max_fired_ = 0;
    std::uint64_t armed_sum_ = 0;
    struct {
        std::uint64_t arms = 0, moves = 0, false_moves = 0, cancels = 0, destroys = 0,
                      transfers = 0, advances = 0, created = 0, reentrant = 0;
    } counts_;
};

tick_type differential::random_deadline() {
    const tick_type now = wheel_.now();
    const unsigned kind = static_cast<unsigned>(below(100));
    tick_type d;
    if (kind < 5) { // past
        d = now - std::min<tick_type>(now, 1 + below(1000));
    } else if (kind < 10) {
        d = now;
    } else if (kind < 12) { // the same tick as a recent arm, when still ahead
        d = std::max(last_deadline_, now);
    } else if (kind < 17) { // the same tick as an armed entry (FIFO among arms of a tick)
        d = now;
        if (!by_latest_.empty() && chance(50)) { // one of the next to fire
            auto it = by_latest_.begin();
            for (auto steps = below(8); steps > 0 && std::next(it) != by_latest_.end(); --steps) {
                ++it;
            }
            d = std::max(model_[it->second].deadline, now);
        } else if (!armed_.empty()) {
            d = std::max(model_[armed_index()].deadline, now);
        }
    } else if (kind < 19) { // around a level boundary or a slot start
        const unsigned level = 1 + static_cast<unsigned>(below(wheel_.levels()));
        const tick_type g = level >= 8 ? tick_type{1} << 63 : tick_type{1} << (8 * level);
        const tick_type up = saturating_add(now, g);
        d = chance(50) ? up : saturating_add(up & ~(g - 1), below(3));
        d = std::max<tick_type>(d, 1) - 1 + std::min<tick_type>(below(3), max_tick - d);
    } else if (kind < 20) { // at the top of the tick range
        d = max_tick - below(chance(50) ? 2 : 300);
    } else if (kind < 45) { // small
        d = saturating_add(now, below(101));
    } else if (kind < 88) { // medium
        d = saturating_add(now, below(1'000'001));
    } else { // huge: up to several ranges
        d = saturating_add(now, below(4 * huge() + 1));
    }
    last_deadline_ = d;
    return d;
}

tick_type differential::random_slack() {
    if (chance(85)) {
        return 0;
    }
    switch (below(6)) {
    case 0:
        return 1 + below(100);
    case 1:
        return below(5001);
    case 2: {
        static constexpr std::array<tick_type, 10> special{
            63, 64, 255, 256, 4095, 65535, 65536, 16777215, 16777216, 262144};
        return special[below(special.size())];
    }
    case 3:
        return below(1'000'001);
    case 4:
        return below(huge() + 1);
    default:
        return 1 + below(62);
    }
}

tick_type differential::random_target() {
    // Mostly small steps, so that entries live long enough to meet each other; now and then
    // a jump that empties most of the wheel, or one beyond the range.
    const tick_type now = wheel_.now();
    const unsigned kind = static_cast<unsigned>(below(10000));
    if (kind < 300) {
        return now - std::min<tick_type>(now, below(10)); // below now(): taken as now()
    }
    if (kind < 7000) {
        return saturating_add(now, below(4)); // 0..3
    }
    if (kind < 9500) {
        return saturating_add(now, below(1001));
    }
    if (kind < 9985) {
        return saturating_add(now, below(10'001));
    }
    if (kind < 9995) {
        return saturating_add(now, below(2'000'001));
    }
    // Beyond the range; near the top of the tick range, at most half the way to its end, so
    // that a run started there keeps deadlines ahead of now() (they saturate at the top).
    return now + std::min(huge() + below(3 * huge()), (max_tick - now) / 2);
}

void differential::check_entry(std::size_t i) {
    if (!pool_[i]) {
        DIFF_CHECK(!model_[i].armed, "entry " << i << " destroyed but armed in the model");
        return;
    }
    const my_entry& e = *pool_[i];
    DIFF_CHECK(e.id == i, "entry " << i << " has id " << e.id);
    DIFF_CHECK(e.armed() == model_[i].armed, "entry " << i << " armed() " << e.armed());
    if (model_[i].armed) {
        DIFF_CHECK(e.deadline() == model_[i].deadline, "entry " << i << " deadline " << e.deadline()
                                                                << ", model "
                                                                << model_[i].deadline);
        DIFF_CHECK(e.slack() == std::min(model_[i].slack, slack_limit),
                   "entry " << i << " slack " << e.slack());
    }
}

void differential::check_all() {
    for (std::size_t i = 0; i < pool_size; ++i) {
        check_entry(i);
    }
    DIFF_CHECK(wheel_.empty() == by_latest_.empty(),
               "empty() " << wheel_.empty() << ", model entries " << by_latest_.size());
}

void differential::do_arm(std::size_t i, tick_type deadline, tick_type slack) {
    my_entry& e = entry(i);
    wheel_.arm(e, deadline, slack);
    record& r = model_[i];
    r.deadline = deadline;
    r.slack = slack;
    r.armed_now = wheel_.now();
    r.seq = ++seq_;
    r.moved = false;
    model_rekey(i);
    ++counts_.arms;
    check_entry(i);
}

void differential::do_move(std::size_t i, tick_type deadline) {
    my_entry& e = entry(i);
    const tick_type before = e.deadline();
    const bool moved = wheel_.move(e, deadline);
    ++counts_.moves;
    DIFF_CHECK(moved == model_[i].armed, "move of entry " << i << " returned " << moved);
    if (moved) {
        record& r = model_[i];
        r.deadline = deadline;
        r.armed_now = wheel_.now();
        r.moved = true;
        model_rekey(i);
    } else {
        ++counts_.false_moves;
        DIFF_CHECK(e.deadline() == before, "a failed move changed the deadline");
    }
    check_entry(i);
}

void differential::do_move_earlier(std::size_t i) {
    const tick_type now = wheel_.now();
    const tick_type current = pool_[i] ? pool_[i]->deadline() : now;
    tick_type d;
    if (current <= now || chance(15)) {
        d = now - std::min<tick_type>(now, below(50)); // due now
    } else if (chance(50)) {
        d = current - 1 - below(std::min<tick_type>(current - now, 64)); // a little earlier
    } else {
        d = now + below(current - now); // anywhere in [now, current)
    }
    do_move(i, d);
}

void differential::do_move_later(std::size_t i) {
    const tick_type now = wheel_.now();
    const tick_type current = std::max(pool_[i] ? pool_[i]->deadline() : now, now);
    switch (below(4)) {
    case 0:
        do_move(i, saturating_add(current, below(64)));
        break;
    case 1:
        do_move(i, saturating_add(current, below(100'000)));
        break;
    case 2:
        do_move(i, saturating_add(current, below(3 * huge())));
        break;
    default:
        do_move(i, random_deadline());
        break;
    }
}

void differential::do_cancel(std::size_t i) {
    if (!pool_[i]) {
        return;
    }
    const bool cancelled = wheel_.cancel(*pool_[i]);
    ++counts_.cancels;
    DIFF_CHECK(cancelled == model_[i].armed, "cancel of entry " << i << " returned " << cancelled);
    DIFF_CHECK(!wheel_.cancel(*pool_[i]), "second cancel of entry " << i << " returned true");
    model_disarm(i);
    check_entry(i);
}

void differential::do_destroy(std::size_t i) {
    pool_[i].reset();
    model_disarm(i);
    ++counts_.destroys;
}

void differential::do_transfer(std::size_t from, std::size_t to) {
    if (from == to || !pool_[from]) {
        return;
    }
    ++counts_.transfers;
    if (!pool_[to] || chance(50)) {
        pool_[to].reset();
        model_disarm(to);
        pool_[to].emplace(std::move(*pool_[from])); // move construction
    } else {
        model_disarm(to); // move assignment disarms the target first
        static_cast<tw::wheel_entry&>(*pool_[to]) =
            std::move(static_cast<tw::wheel_entry&>(*pool_[from]));
    }
    pool_[to]->id = to;
    if (model_[from].armed) {
        const record moved = model_[from];
        model_disarm(from);
        record& r = model_[to];
        r.deadline = moved.deadline;
        r.slack = moved.slack;
        r.armed_now = moved.armed_now;
        r.seq = moved.seq;
        r.moved = moved.moved;
        model_rekey(to);
    }
    DIFF_CHECK(!pool_[from]->armed(), "moved-from entry " << from << " is armed");
    check_entry(from);
    check_entry(to);
}

void differential::on_fire(tw::wheel_entry& e) {
    ++calls_;
    ++fires_;
    const tick_type t = wheel_.now();
    my_entry& me = static_cast<my_entry&>(e);
    const std::size_t id = me.id;
    DIFF_CHECK(id < pool_size, "fired an entry with id " << id);
    DIFF_CHECK(pool_[id].has_value() && &*pool_[id] == &me,
               "fired entry " << id << " is not the live entry of its index");
    const record& r = model_[id];
    DIFF_CHECK(r.armed, "entry " << id << " fired at " << t << " but is not armed (fired twice, "
                                 << "or after cancel or destruction)");
    DIFF_CHECK(!e.armed(), "entry " << id << " is still armed in its handler");
    DIFF_CHECK(t <= target_,
               "entry " << id << " fired at " << t << " beyond the target " << target_);
    DIFF_CHECK(!any_fired_ || t >= last_fire_,
               "entry " << id << " fired at " << t << " after a fire at " << last_fire_);
    DIFF_CHECK(t >= r.deadline && t >= r.armed_now,
               "entry " << id << " fired early at " << t << ": deadline " << r.deadline
                        << ", armed or moved at " << r.armed_now);
    if (r.slack == 0) {
        DIFF_CHECK(t == std::max(r.deadline, r.armed_now),
                   "exact entry " << id << " fired at " << t << ": deadline " << r.deadline
                                  << ", armed or moved at " << r.armed_now);
    } else {
        DIFF_CHECK(t <= latest_of(r), "slack entry " << id << " fired late at " << t
                                                     << ": deadline " << r.deadline << ", slack "
                                                     << r.slack << ", armed or moved at "
                                                     << r.armed_now);
    }
    // Nothing else has been left behind.
    DIFF_CHECK(by_latest_.begin()->first >= t,
               "entry " << by_latest_.begin()->second << " should have fired by "
                        << by_latest_.begin()->first << ", now " << t);
    if (!r.moved) {
        // FIFO among the entries of one tick: exact and due-now entries all together; an
        // entry with slack among those of its deadline (wheel.hpp, Precision).
        if (!fifo_valid_ || fifo_tick_ != t) {
            fifo_last_.clear();
        }
        const bool ordered_with_exact = r.slack == 0 || r.deadline <= r.armed_now;
        const std::pair<bool, tick_type> key{ordered_with_exact,
                                             ordered_with_exact ? 0 : r.deadline};
        const auto [last, first_of_key] = fifo_last_.try_emplace(key, r.seq);
        if (!first_of_key) {
            ++fifo_comparisons_;
            DIFF_CHECK(r.seq > last->second, "FIFO: entry " << id << " (arm #" << r.seq
                                                            << ") fired at " << t << " after arm #"
                                                            << last->second);
            last->second = r.seq;
        }
        fifo_valid_ = true;
        fifo_tick_ = t;
    }
    any_fired_ = true;
    last_fire_ = t;
    model_disarm(id);

    // Re-enter the wheel.
    const unsigned what = static_cast<unsigned>(below(100));
    if (what >= 30) {
        return;
    }
    ++counts_.reentrant;
    if (what < 10) {
        do_arm(id, random_deadline(), random_slack()); // e.g. periodic
    } else if (what < 12) {
        DIFF_CHECK(!wheel_.move(e, t + 5), "entry " << id << " could be moved in its handler");
        DIFF_CHECK(!e.armed(), "a failed move armed entry " << id);
    } else if (what < 16) {
        do_cancel(victim_index());
    } else if (what < 19) {
        const std::size_t i = victim_index();
        if (chance(50)) {
            do_move_earlier(i);
        } else {
            do_move_later(i);
        }
    } else if (what < 22) {
        const std::size_t i = victim_index();
        do_destroy(i); // possibly the entry being fired: e is not touched again
    } else if (what < 23) {
        do_destroy(id);
    } else if (what < 28) {
        do_arm(any_index(), random_deadline(), random_slack());
    } else {
        do_transfer(chance(50) ? id : any_index(), any_index());
    }
}

void differential::do_advance() {
    ++counts_.advances;
    const tick_type before = wheel_.now();
    const tick_type requested = random_target();
    const std::size_t budget = chance(25) ? static_cast<std::size_t>(1 + below(20))
                                          : std::numeric_limits<std::size_t>::max();
    target_ = std::max(requested, before);
    calls_ = 0;
    const std::size_t fired =
        wheel_.advance(requested, budget, [this](tw::wheel_entry& e) { on_fire(e); });
    DIFF_CHECK(fired == calls_, "advance returned " << fired << ", handler calls " << calls_);
    DIFF_CHECK(fired <= budget, "advance fired " << fired << " with budget " << budget);
    max_fired_ = std::max(max_fired_, fired);
    const std::optional<tick_type> next = wheel_.next_expiry();
    const bool complete = fired < budget || !next || *next > target_;
    if (complete) {
        DIFF_CHECK(wheel_.now() == target_,
                   "complete advance to " << requested << " left now() at " << wheel_.now());
        DIFF_CHECK(by_latest_.empty() || by_latest_.begin()->first > target_,
                   "entry " << by_latest_.begin()->second << " was due by "
                            << by_latest_.begin()->first << " and did not fire by " << target_);
    } else {
        ++cut_advances_;
        DIFF_CHECK(wheel_.now() >= before && wheel_.now() <= target_,
                   "advance cut by its budget left now() at " << wheel_.now());
    }
    if (next) {
        DIFF_CHECK(*next >= wheel_.now(), "next_expiry() " << *next << " is in the past");
        DIFF_CHECK(!by_latest_.empty(), "next_expiry() " << *next << " on an empty model");
        DIFF_CHECK(*next <= by_latest_.begin()->first,
                   "next_expiry() " << *next << " is after the latest fire tick "
                                    << by_latest_.begin()->first << " of entry "
                                    << by_latest_.begin()->second);
    } else {
        DIFF_CHECK(by_latest_.empty(),
                   "next_expiry() is empty with " << by_latest_.size() << " entries armed");
    }
}

void differential::run() {
    for (op_ = 0; op_ < ops_; ++op_) {
        const unsigned what = static_cast<unsigned>(below(1000));
        if (what < 300) {
            do_arm(any_index(), random_deadline(), random_slack());
        } else if (what < 390) {
            do_move_earlier(armed_index());
        } else if (what < 480) {
            do_move_later(armed_index());
        } else if (what < 500) {
            // An unarmed entry: never armed, destroyed and re-created, fired or cancelled.
            std::size_t i = any_index();
            for (int tries = 0; tries < 8 && model_[i].armed; ++tries) {
                i = any_index();
            }
            do_move(i, random_deadline());
        } else if (what < 550) {
            do_cancel(armed_index());
        } else if (what < 580) {
            do_destroy(armed_index());
        } else if (what < 600) {
            do_transfer(armed_index(), any_index());
        } else {
            do_advance();
        }
        armed_sum_ += by_latest_.size();
        if (op_ % 4096 == 0) {
            check_all();
        }
    }
    // Drain what is left, then everything must have fired.
    op_ = ops_;
    target_ = wheel_.now();
    check_all();
    const tick_type end = by_latest_.empty() ? wheel_.now() : by_latest_.rbegin()->first;
    target_ = std::max(end, wheel_.now());
    calls_ = 0;
    const std::size_t fired = wheel_.advance(end, [this](tw::wheel_entry& e) {
        // No re-entrant operations here, so that the drain terminates.
        const std::size_t id = static_cast<my_entry&>(e).id;
        const tick_type t = wheel_.now();
        DIFF_CHECK(model_[id].armed, "entry " << id << " fired but is not armed");
        DIFF_CHECK(t >= model_[id].deadline && t <= latest_of(model_[id]),
                   "entry " << id << " fired at " << t << " outside its window");
        model_disarm(id);
        ++calls_;
        ++fires_;
    });
    DIFF_CHECK(fired == calls_, "final advance returned " << fired);
    DIFF_CHECK(by_latest_.empty(), by_latest_.size() << " entries never fired");
    DIFF_CHECK(wheel_.empty(), "wheel not empty at the end");
    check_all();
}

std::string differential::stats() const {
    std::ostringstream os;
    os << "fires " << fires_ << ", arms " << counts_.arms << ", moves " << counts_.moves
       << " (false " << counts_.false_moves << "), cancels " << counts_.cancels << ", destroys "
       << counts_.destroys << ", transfers " << counts_.transfers << ", advances "
       << counts_.advances << " (cut by budget " << cut_advances_ << ", most fired " << max_fired_
       << "), re-entrant handlers " << counts_.reentrant << ", FIFO comparisons "
       << fifo_comparisons_ << ", mean armed " << (ops_ == 0 ? 0 : armed_sum_ / ops_)
       << ", final now " << wheel_.now();
    return os.str();
}

void run_differential(std::uint64_t seed, unsigned levels) {
    const std::uint64_t ops = env_number("TIMEWHEEL_OPS").value_or(1'000'000);
    std::mt19937_64 start_rng(seed ^ 0x5bd1e995u);
    tick_type start = 0;
    switch (start_rng() % 4) {
    case 1:
        start = start_rng() % 1'000'000;
        break;
    case 2:
        start = (tick_type{1} << 40) - 1000 + start_rng() % 2000;
        break;
    case 3: // near the top of the tick range: the wheel's time reaches the largest tick
        start =
            std::numeric_limits<tick_type>::max() - (tick_type{1} << 34) - start_rng() % 1'000'000;
        break;
    default:
        break;
    }

    std::cout << "wheel_differential: TIMEWHEEL_SEED=" << seed << " TIMEWHEEL_OPS=" << ops
              << " levels " << levels << " start " << start << std::endl;
    BOOST_TEST_MESSAGE("seed " << seed << ", " << ops << " operations, levels " << levels
                               << ", start " << start);

    differential test(seed, ops, levels, start);
    test.run();

    std::cout << "wheel_differential: " << test.stats() << std::endl;
    BOOST_TEST_MESSAGE(test.stats());
    if (ops >= 100'000) {
        // The run exercised what it is meant to.
        BOOST_TEST(test.fires() > ops / 20);
        BOOST_TEST(test.fifo_comparisons() > 0u);
        BOOST_TEST(test.cut_advances() > 0u);
    }
}

std::uint64_t the_seed() {
    static const std::uint64_t seed = env_number("TIMEWHEEL_SEED").value_or(std::random_device{}());
    return seed;
}

} // namespace

BOOST_AUTO_TEST_CASE(differential_against_a_reference_model) {
    static constexpr std::array<unsigned, 4> level_choices{2, 3, 6, 8};
    const std::uint64_t seed = the_seed();
    run_differential(
        seed,
        static_cast<unsigned>(
            env_number("TIMEWHEEL_LEVELS").value_or(level_choices[seed % level_choices.size()])));
}

// A one-level wheel with every seed: its level 0 is its top level, whose slots hold the
// entries of later rotations too (what the levels above do for the others).
BOOST_AUTO_TEST_CASE(differential_one_level_wheel) {
    run_differential(the_seed(), 1);
}

// Two levels with every seed: no seed of CI picks them above.
BOOST_AUTO_TEST_CASE(differential_two_level_wheel) {
    run_differential(the_seed(), 2);
}
