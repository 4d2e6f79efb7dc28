// The cron expression parser: text to detail::fields.
//
// Why it looks like this: expressions come from HTTP bodies, so the parser is written for
// hostile input. The length is bounded (max_length) before anything else, every loop moves
// forward through the text once (no backtracking, no recursion), numbers saturate instead of
// overflowing, and every fault is a parse_error naming the field as written (1 to 6), its
// name, the offset where the fault starts and what was wrong, in one form:
// `field 2 (hour): 25 is out of range 0-23`. Faults of the whole expression are field 0.
#include "fields.hpp"

#include <timewheel/cron/schedule.hpp>

#include <array>
#include <cstdio>
#include <string>

namespace timewheel::cron::detail {
namespace {

// Longer expressions are refused before they are read: no real schedule comes near it.
constexpr std::size_t max_length = 256;

enum class kind { second, minute, hour, day, month, weekday };

struct field_spec {
    kind k;
    const char* name;
    int min;
    int max;      // the highest value accepted (day-of-week: 7, Sunday again)
    int star_max; // the highest value `*` stands for (day-of-week: 6)
};

constexpr std::array<field_spec, 6> specs{{
    {kind::second, "second", 0, 59, 59},
    {kind::minute, "minute", 0, 59, 59},
    {kind::hour, "hour", 0, 23, 23},
    {kind::day, "day-of-month", 1, 31, 31},
    {kind::month, "month", 1, 12, 12},
    {kind::weekday, "day-of-week", 0, 7, 6},
}};

constexpr std::array<std::string_view, 12> month_names{"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                       "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<std::string_view, 7> weekday_names{"SUN", "MON", "TUE", "WED",
                                                        "THU", "FRI", "SAT"};

struct macro {
    std::string_view name;
    std::string_view expansion;
};
constexpr std::array<macro, 8> macros{{
    {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
}};

bool is_space(char c) noexcept {
    return c == ' ' || c == '\t';
}
bool is_digit(char c) noexcept {
    return c >= '0' && c <= '9';
}
bool is_alpha(char c) noexcept {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
char upper(char c) noexcept {
    return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
}
bool equal_nocase(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (upper(a[i]) != upper(b[i]))
            return false;
    return true;
}

// A character as a message shows it: printable ASCII quoted, anything else as \xNN.
std::string show(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x21 && u < 0x7F)
        return std::string("'") + c + "'";
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "\\x%02X", u);
    return buffer;
}

[[noreturn]] void fail_expression(const std::string& what, std::size_t position) {
    throw parse_error(what, 0, position);
}

// One field of the expression: text[begin, end) is field `number` (as written).
class field_parser {
public:
    field_parser(std::string_view text, std::size_t begin, std::size_t end, int number,
                 const field_spec& spec, fields& out)
        : text_(text)
        , pos_(begin)
        , end_(end)
        , number_(number)
        , spec_(spec)
        , out_(out) {}

    void parse() {
        const char first = text_[pos_];
        if (spec_.k == kind::day)
            out_.days_star = first == '*' || first == '?';
        if (spec_.k == kind::weekday)
            out_.weekdays_star = first == '*' || first == '?';
        for (;;) {
            item();
            if (pos_ == end_)
                return;
            if (text_[pos_] != ',')
                fail(pos_, "unexpected character " + show(text_[pos_]));
            ++pos_;
            if (pos_ == end_)
                fail(pos_, "empty list item");
        }
    }

private:
    [[noreturn]] void fail(std::size_t position, const std::string& what) const {
        throw parse_error("field " + std::to_string(number_) + " (" + spec_.name + "): " + what,
                          number_, position);
    }

    char peek() const noexcept { return pos_ < end_ ? text_[pos_] : '\0'; }
    bool at_item_end() const noexcept { return pos_ == end_ || text_[pos_] == ','; }

    std::string range_text() const {
        return std::to_string(spec_.min) + "-" + std::to_string(spec_.max);
    }

    // A number or (month, day-of-week) a name; checked against the field's range.
    int value() {
        const std::size_t start = pos_;
        if (is_digit(peek())) {
            long v = 0;
            while (is_digit(peek())) {
                if (v < 1000000)
                    v = v * 10 + (text_[pos_] - '0');
                ++pos_;
            }
            if (v < spec_.min || v > spec_.max)
                fail(start, std::string(text_.substr(start, pos_ - start)) + " is out of range " +
                                range_text());
            return static_cast<int>(v);
        }
        if (is_alpha(peek()) && (spec_.k == kind::month || spec_.k == kind::weekday)) {
            while (is_alpha(peek()))
                ++pos_;
            const auto word = text_.substr(start, pos_ - start);
            if (spec_.k == kind::month) {
                for (std::size_t i = 0; i < month_names.size(); ++i)
                    if (equal_nocase(word, month_names[i]))
                        return static_cast<int>(i) + 1;
            } else {
                for (std::size_t i = 0; i < weekday_names.size(); ++i)
                    if (equal_nocase(word, weekday_names[i]))
                        return static_cast<int>(i);
            }
            fail(start, "unknown name \"" + std::string(word) + "\"");
        }
        if (pos_ == end_ || peek() == ',')
            fail(start, "a value is missing");
        fail(start, "unexpected character " + show(peek()));
    }

    // A step after `/`: 1 to the size of the field's range.
    int step() {
        const std::size_t start = pos_;
        const int size = spec_.star_max - spec_.min + 1;
        if (!is_digit(peek())) {
            if (at_item_end())
                fail(start, "a step is missing after '/'");
            fail(start, "unexpected character " + show(peek()));
        }
        long v = 0;
        while (is_digit(peek())) {
            if (v < 1000000)
                v = v * 10 + (text_[pos_] - '0');
            ++pos_;
        }
        if (v < 1 || v > size)
            fail(start, "step " + std::string(text_.substr(start, pos_ - start)) +
                            " is out of range 1-" + std::to_string(size));
        return static_cast<int>(v);
    }

    void set(int v) noexcept {
        switch (spec_.k) {
        case kind::second:
            out_.seconds |= std::uint64_t{1} << v;
            break;
        case kind::minute:
            out_.minutes |= std::uint64_t{1} << v;
            break;
        case kind::hour:
            out_.hours |= std::uint32_t{1} << v;
            break;
        case kind::day:
            out_.days |= std::uint32_t{1} << v;
            break;
        case kind::month:
            out_.months |= std::uint32_t{1} << v;
            break;
        case kind::weekday:
            out_.weekdays |= std::uint32_t{1} << (v % 7);
            break;
        }
    }

    // The optional forms of the day fields; true when the item was one of them.
    bool special_item() {
        const std::size_t start = pos_;
        std::size_t stop = pos_;
        while (stop < end_ && text_[stop] != ',')
            ++stop;
        const auto item = text_.substr(start, stop - start);
        if (spec_.k == kind::day) {
            if (equal_nocase(item, "L")) {
                out_.last_day = true;
            } else if (equal_nocase(item, "LW")) {
                out_.last_weekday_of_month = true;
            } else if (item.size() > 1 && upper(item.back()) == 'W' && is_digit(item.front())) {
                const int d = value();
                if (pos_ != stop - 1)
                    fail(pos_, "unexpected character " + show(text_[pos_]));
                out_.nearest_weekday |= std::uint32_t{1} << d;
            } else {
                return false;
            }
            pos_ = stop;
            return true;
        }
        if (spec_.k != kind::weekday)
            return false;
        if (item.size() > 1 && upper(item.back()) == 'L' &&
            (is_digit(item.front()) || is_alpha(item.front()))) {
            // `5L`, `FRIL`: the name reader would swallow the L, so read the day before it.
            const std::string_view day = item.substr(0, item.size() - 1);
            int w = -1;
            if (is_digit(day.front())) {
                w = value();
            } else {
                for (std::size_t i = 0; i < weekday_names.size(); ++i)
                    if (equal_nocase(day, weekday_names[i]))
                        w = static_cast<int>(i);
                if (w < 0)
                    return false; // an unknown name: the general path says so
                pos_ += day.size();
            }
            if (pos_ != stop - 1)
                fail(pos_, "unexpected character " + show(text_[pos_]));
            out_.last_of_weekday |= std::uint32_t{1} << (w % 7);
            pos_ = stop;
            return true;
        }
        const auto hash = item.find('#');
        if (hash == std::string_view::npos)
            return false;
        const int w = value();
        if (pos_ != start + hash)
            fail(pos_, "unexpected character " + show(text_[pos_]));
        ++pos_;
        const std::size_t nstart = pos_;
        if (!is_digit(peek()))
            fail(nstart, at_item_end() ? "a number is missing after '#'"
                                       : "unexpected character " + show(peek()));
        long n = 0;
        while (is_digit(peek())) {
            if (n < 1000000)
                n = n * 10 + (text_[pos_] - '0');
            ++pos_;
        }
        if (n < 1 || n > 5)
            fail(nstart, std::string(text_.substr(nstart, pos_ - nstart)) +
                             " is out of range 1-5 (the n-th weekday of a month)");
        if (!at_item_end())
            fail(pos_, "unexpected character " + show(peek()));
        out_.nth_weekday |= std::uint64_t{1} << (8 * n + w % 7);
        return true;
    }

    void item() {
        const std::size_t start = pos_;
        if (at_item_end())
            fail(start, "empty list item");
        if (special_item())
            return;
        int lo = 0;
        int hi = 0;
        bool star = false;
        bool range = false;
        if (peek() == '*' || peek() == '?') {
            if (peek() == '?' && spec_.k != kind::day && spec_.k != kind::weekday)
                fail(start, "'?' is only allowed in day-of-month and day-of-week");
            ++pos_;
            lo = spec_.min;
            hi = spec_.star_max;
            star = true;
        } else {
            lo = value();
            hi = lo;
            if (peek() == '-') {
                ++pos_;
                range = true;
                hi = value();
                if (hi < lo)
                    fail(start, "range " + std::string(text_.substr(start, pos_ - start)) +
                                    " is backwards");
            }
        }
        int by = 1;
        if (peek() == '/') {
            ++pos_;
            by = step();
            if (!star && !range)
                hi = spec_.star_max; // `a/n`: a, a+n, ... to the end of the field
        }
        if (!at_item_end())
            fail(pos_, "unexpected character " + show(peek()));
        for (int v = lo; v <= hi; v += by)
            set(v);
    }

    std::string_view text_;
    std::size_t pos_;
    std::size_t end_;
    int number_;
    const field_spec& spec_;
    fields& out_;
};

} // namespace

fields parse_fields(std::string_view expression) {
    if (expression.size() > max_length)
        fail_expression("expression is longer than " + std::to_string(max_length) + " bytes",
                        max_length);
    // Where the fields are: at most 6, a seventh means too many.
    std::array<std::size_t, 7> begin{};
    std::array<std::size_t, 7> end{};
    std::size_t count = 0;
    std::size_t total = 0;
    for (std::size_t i = 0; i < expression.size();) {
        if (is_space(expression[i])) {
            ++i;
            continue;
        }
        const std::size_t b = i;
        while (i < expression.size() && !is_space(expression[i]))
            ++i;
        if (count < begin.size()) {
            begin[count] = b;
            end[count] = i;
            ++count;
        }
        ++total;
    }
    if (total == 0)
        fail_expression("empty expression", 0);
    if (expression[begin[0]] == '@') {
        const auto name = expression.substr(begin[0], end[0] - begin[0]);
        for (const auto& m : macros) {
            if (!equal_nocase(name, m.name))
                continue;
            if (total > 1)
                fail_expression("a macro stands alone, got more after " + std::string(m.name),
                                begin[1]);
            return parse_fields(m.expansion);
        }
        fail_expression("unknown macro \"" + std::string(name) + "\"", begin[0]);
    }
    if (total != 5 && total != 6)
        fail_expression("expected 5 or 6 fields, got " + std::to_string(total), 0);
    fields out;
    const std::size_t first_spec = total == 6 ? 0 : 1;
    for (std::size_t f = 0; f < total; ++f)
        field_parser(expression, begin[f], end[f], static_cast<int>(f) + 1, specs[first_spec + f],
                     out)
            .parse();
    if (total == 5)
        out.seconds = 1; // second 0
    return out;
}

} // namespace timewheel::cron::detail
