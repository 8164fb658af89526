"""The vocabulary of the synthetic product-search world: categories, product types and the
surface forms (synonyms, abbreviations, unit spellings) shoppers and sellers use for them.

Every name list puts the catalogue's canonical form first. Words shared by product types of
different categories ("office", "body", "mouse", "filter", "fan", "pad", "sink", "bulb",
"hose", "battery", "cabinet", ...) are the context-dependent senses the world is built to
contain; :data:`AMBIGUOUS_WORDS` lists them.
"""

from __future__ import annotations

import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class ProductType:
    """A latent product type: the intent a query asks for and a document is an instance of.

    ``names``: canonical catalogue name first, then synonyms. ``colours``/``materials``:
    keys of :data:`COLOURS`/:data:`MATERIALS`. ``sizes``: ``"<number> <unit>"`` with the
    unit a key of :data:`UNITS`. ``features``: canonical title phrases.
    """

    key: str
    category: str
    names: tuple[str, ...]
    colours: tuple[str, ...] = ()
    materials: tuple[str, ...] = ()
    sizes: tuple[str, ...] = ()
    features: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Category:
    name: str
    brands: tuple[str, ...]
    uses: tuple[str, ...]  # phrases completing "ideal for ..." in descriptions


CATEGORIES = {
    c.name: c
    for c in (
        Category(
            "furniture",
            ("Hartwell", "Norvik", "Casa Linea", "Oakridge"),
            ("the living room", "a home office", "the bedroom", "small apartments"),
        ),
        Category(
            "electronics",
            ("Voltra", "Pixelon", "Keytek", "Amperio"),
            ("a home office", "gaming setups", "the workstation", "everyday computing"),
        ),
        Category(
            "software",
            ("Quillsoft", "Ledgerly", "Brightbyte"),
            ("home and small business use", "students and families", "a home office", "pc and mac"),
        ),
        Category(
            "automotive",
            ("Torqline", "Roadmaster Pro", "Autovia", "Gearhead"),
            ("cars, trucks and suvs", "the garage", "diy auto repair", "most vehicle makes"),
        ),
        Category(
            "bathroom",
            ("Aquelle", "Glacier Bay Co", "Bathwell", "Purelle"),
            ("the master bath", "guest bathrooms", "everyday use", "a spa-like shower"),
        ),
        Category(
            "kitchen",
            ("Kitchara", "Hearthstone", "Culinex", "Westbrook"),
            ("the kitchen", "busy families", "everyday cooking", "a kitchen remodel"),
        ),
        Category(
            "garden",
            ("Greenfield", "Yardly", "Terra Verde", "Sunroot"),
            ("the backyard", "lawn and garden care", "outdoor use", "the patio"),
        ),
        Category(
            "lighting",
            ("Lumora", "Brightway", "Halcyon", "Glowell"),
            ("the living room", "a home office", "outdoor spaces", "the kitchen"),
        ),
        Category(
            "paint",
            ("Colorcraft", "Tintwell", "Brushstone", "Primeline"),
            ("interior walls", "trim and doors", "diy projects", "fences and decks"),
        ),
        Category(
            "tools",
            ("Ironclad", "Dewmark", "Ridgeline", "Toolsmith"),
            ("the workshop", "diy projects", "professional contractors", "the garage"),
        ),
    )
}

_T = ProductType
PRODUCT_TYPES: tuple[ProductType, ...] = (
    # furniture
    _T(
        "office_chair",
        "furniture",
        ("office chair", "desk chair", "task chair", "computer chair"),
        ("black", "gray", "white"),
        ("mesh", "leather", "fabric"),
        (),
        ("with armrests", "with lumbar support", "with headrest"),
    ),
    _T(
        "office_desk",
        "furniture",
        ("office desk", "computer desk", "writing desk", "work desk"),
        ("black", "white", "espresso"),
        ("wood", "oak", "steel", "glass"),
        ("48 in.", "55 in.", "60 in."),
        ("with drawers", "with keyboard tray"),
    ),
    _T(
        "sofa",
        "furniture",
        ("sofa", "couch", "settee"),
        ("gray", "beige", "blue", "brown"),
        ("fabric", "leather"),
        ("72 in.", "84 in."),
        ("with chaise", "reclining"),
    ),
    _T(
        "bookcase",
        "furniture",
        ("bookcase", "bookshelf", "book shelf", "shelving unit"),
        ("white", "black", "espresso"),
        ("wood", "oak", "steel"),
        ("36 in.", "72 in."),
        ("with doors",),
    ),
    _T(
        "dining_table",
        "furniture",
        ("dining table", "kitchen table", "dinner table"),
        ("brown", "white", "black"),
        ("wood", "oak", "glass"),
        ("48 in.", "60 in.", "72 in."),
        ("with bench", "extendable"),
    ),
    _T(
        "tv_stand",
        "furniture",
        ("tv stand", "media console", "entertainment center", "tv console"),
        ("black", "espresso", "white"),
        ("wood", "glass"),
        ("55 in.", "65 in."),
        ("with fireplace", "with storage"),
    ),
    _T(
        "file_cabinet",
        "furniture",
        ("file cabinet", "filing cabinet", "office cabinet"),
        ("black", "gray", "white"),
        ("steel", "wood"),
        (),
        ("2-drawer", "3-drawer", "with lock"),
    ),
    # electronics
    _T(
        "computer_mouse",
        "electronics",
        ("computer mouse", "optical mouse", "pc mouse", "mouse"),
        ("black", "white", "gray"),
        (),
        (),
        ("wireless", "bluetooth", "ergonomic"),
    ),
    _T(
        "computer_monitor",
        "electronics",
        ("computer monitor", "monitor", "pc display", "screen"),
        ("black", "silver"),
        (),
        ("24 in.", "27 in.", "32 in."),
        ("4k", "curved", "with speakers"),
    ),
    _T(
        "baby_monitor",
        "electronics",
        ("baby monitor", "video baby monitor", "nursery monitor"),
        ("white",),
        (),
        (),
        ("with camera", "with night vision"),
    ),
    _T(
        "mouse_pad",
        "electronics",
        ("mouse pad", "mousepad", "mouse mat", "desk pad"),
        ("black", "gray", "blue"),
        ("rubber", "fabric"),
        (),
        ("with wrist rest", "extended"),
    ),
    _T(
        "heat_sink",
        "electronics",
        ("heat sink", "cpu cooler", "heatsink"),
        ("black", "silver"),
        ("aluminum", "copper"),
        ("92 mm", "120 mm"),
        ("with fan",),
    ),
    _T(
        "extension_cord",
        "electronics",
        ("extension cord", "extension cable", "power cord"),
        ("white", "black", "orange"),
        (),
        ("6 ft.", "25 ft.", "50 ft."),
        ("heavy duty", "indoor/outdoor"),
    ),
    _T(
        "power_strip",
        "electronics",
        ("power strip", "surge protector", "outlet strip"),
        ("white", "black"),
        (),
        ("6 Outlet", "8 Outlet", "12 Outlet"),
        ("with usb ports",),
    ),
    _T(
        "aa_batteries",
        "electronics",
        ("aa batteries", "aa battery", "double a batteries", "alkaline batteries"),
        (),
        (),
        ("4 Pack", "8 Pack", "24 Pack"),
        ("rechargeable",),
    ),
    # software
    _T(
        "office_software",
        "software",
        ("office software", "office suite", "office 365", "productivity software"),
        features=("1-year subscription", "for mac", "for windows"),
    ),
    _T(
        "antivirus",
        "software",
        ("antivirus software", "antivirus", "virus protection", "internet security"),
        features=("1-year subscription", "3 devices", "for mac"),
    ),
    _T(
        "photo_editor",
        "software",
        ("photo editing software", "photo editor", "image editing software"),
        features=("for mac", "for windows", "digital download"),
    ),
    _T(
        "tax_software",
        "software",
        ("tax software", "tax preparation software", "tax prep software"),
        features=("deluxe", "for windows", "digital download"),
    ),
    # automotive
    _T(
        "body_filler",
        "automotive",
        ("body filler", "auto body filler", "car body filler", "body putty"),
        (),
        (),
        ("1 qt.", "1 gal."),
        ("lightweight",),
    ),
    _T(
        "body_panel",
        "automotive",
        ("body panel", "car body panel", "fender panel", "replacement panel"),
        ("black", "silver"),
        ("steel", "aluminum"),
        (),
        ("primed",),
    ),
    _T(
        "car_battery",
        "automotive",
        ("car battery", "auto battery", "automotive battery", "vehicle battery"),
        (),
        (),
        ("12 Volt",),
        ("group 24", "group 35", "agm"),
    ),
    _T(
        "engine_air_filter",
        "automotive",
        ("engine air filter", "air filter", "car air filter"),
        (),
        (),
        (),
        ("high flow", "washable"),
    ),
    _T(
        "cabin_filter",
        "automotive",
        ("cabin air filter", "cabin filter", "pollen filter"),
        (),
        (),
        (),
        ("with activated carbon",),
    ),
    _T(
        "radiator_hose",
        "automotive",
        ("radiator hose", "coolant hose", "upper radiator hose"),
        ("black",),
        ("rubber",),
        (),
        ("with clamps",),
    ),
    _T(
        "brake_pads",
        "automotive",
        ("brake pads", "brake pad set", "disc brake pads"),
        (),
        ("ceramic", "steel"),
        (),
        ("front", "rear"),
    ),
    _T(
        "wiper_blade",
        "automotive",
        ("wiper blade", "windshield wiper", "wiper", "windshield wiper blade"),
        ("black",),
        ("rubber",),
        ("18 in.", "22 in.", "26 in."),
        ("all season",),
    ),
    _T(
        "radiator_fan",
        "automotive",
        ("radiator fan", "cooling fan", "radiator cooling fan"),
        ("black",),
        (),
        (),
        ("with shroud",),
    ),
    # bathroom
    _T(
        "body_wash",
        "bathroom",
        ("body wash", "shower gel", "bath gel"),
        (),
        (),
        ("16 oz.", "24 oz."),
        ("moisturizing", "unscented"),
    ),
    _T(
        "bathroom_faucet",
        "bathroom",
        ("bathroom faucet", "bathroom sink faucet", "lavatory faucet", "bathroom tap"),
        ("chrome", "brushed_nickel", "oil_rubbed_bronze", "black"),
        ("brass",),
        (),
        ("single handle", "widespread", "with drain"),
    ),
    _T(
        "shower_head",
        "bathroom",
        ("shower head", "showerhead", "rain shower head", "shower spray"),
        ("chrome", "brushed_nickel", "oil_rubbed_bronze"),
        (),
        ("8 in.", "10 in.", "12 in."),
        ("handheld", "high pressure"),
    ),
    _T(
        "toilet_seat",
        "bathroom",
        ("toilet seat", "toilet lid", "commode seat"),
        ("white", "beige"),
        ("plastic", "wood"),
        (),
        ("soft close", "elongated", "round"),
    ),
    _T(
        "bathroom_vanity",
        "bathroom",
        ("bathroom vanity", "vanity cabinet", "sink vanity", "vanity"),
        ("white", "gray", "espresso"),
        ("wood",),
        ("24 in.", "30 in.", "36 in.", "48 in."),
        ("with top", "with sink"),
    ),
    _T(
        "exhaust_fan",
        "bathroom",
        ("bathroom exhaust fan", "exhaust fan", "bath fan", "vent fan"),
        ("white",),
        (),
        ("80 CFM", "110 CFM"),
        ("with light", "quiet"),
    ),
    _T(
        "towel_bar",
        "bathroom",
        ("towel bar", "towel rack", "towel rod", "towel holder"),
        ("chrome", "brushed_nickel", "oil_rubbed_bronze"),
        ("stainless_steel", "brass"),
        ("18 in.", "24 in."),
    ),
    # kitchen
    _T(
        "kitchen_faucet",
        "kitchen",
        ("kitchen faucet", "kitchen tap", "kitchen sink faucet", "sink faucet"),
        ("chrome", "brushed_nickel", "black"),
        ("stainless_steel", "brass"),
        (),
        ("with pull-down sprayer", "single handle", "touchless"),
    ),
    _T(
        "kitchen_sink",
        "kitchen",
        ("kitchen sink", "sink", "double bowl sink", "drop-in sink"),
        ("black", "white"),
        ("stainless_steel", "cast_iron", "granite_composite"),
        ("30 in.", "33 in."),
        ("undermount", "farmhouse"),
    ),
    _T(
        "kitchen_cabinet",
        "kitchen",
        ("kitchen cabinet", "base cabinet", "wall cabinet", "cabinet"),
        ("white", "gray", "brown"),
        ("wood", "oak"),
        ("30 in.", "36 in."),
        ("with drawer", "unassembled"),
    ),
    _T(
        "water_filter",
        "kitchen",
        ("water filter", "water filter cartridge", "refrigerator filter", "fridge filter"),
        (),
        (),
        (),
        ("replacement", "3 Pack"),
    ),
    _T(
        "range_hood",
        "kitchen",
        ("range hood", "vent hood", "stove hood", "kitchen hood"),
        ("black", "white"),
        ("stainless_steel",),
        ("30 in.", "36 in."),
        ("under cabinet", "wall mount", "ducted"),
    ),
    _T(
        "microwave",
        "kitchen",
        ("microwave", "microwave oven", "countertop microwave"),
        ("black", "white"),
        ("stainless_steel",),
        ("1.1 cu. ft.", "1.7 cu. ft.", "2.2 cu. ft."),
        ("with sensor cooking",),
    ),
    _T(
        "dishwasher",
        "kitchen",
        ("dishwasher", "dish washer", "built-in dishwasher"),
        ("black", "white"),
        ("stainless_steel",),
        ("18 in.", "24 in."),
        ("quiet", "with third rack"),
    ),
    # garden
    _T(
        "garden_hose",
        "garden",
        ("garden hose", "water hose", "hose", "hose pipe"),
        ("green", "black"),
        ("rubber", "vinyl"),
        ("25 ft.", "50 ft.", "100 ft."),
        ("expandable", "kink resistant"),
    ),
    _T(
        "lawn_mower",
        "garden",
        ("lawn mower", "mower", "push mower", "grass cutter"),
        ("red", "green"),
        (),
        ("20 in.", "21 in."),
        ("self-propelled", "cordless", "gas"),
    ),
    _T(
        "pruning_shears",
        "garden",
        ("pruning shears", "pruners", "secateurs", "garden clippers"),
        ("red", "green"),
        ("steel", "stainless_steel"),
        (),
        ("bypass", "with holster"),
    ),
    _T(
        "flower_bulbs",
        "garden",
        ("flower bulbs", "tulip bulbs", "spring bulbs", "bulbs"),
        ("red", "yellow", "purple", "white"),
        (),
        ("10 Pack", "25 Pack"),
        ("mixed colors", "perennial"),
    ),
    _T(
        "mouse_trap",
        "garden",
        ("mouse trap", "mousetrap", "rodent trap", "mice trap"),
        (),
        ("plastic", "wood"),
        ("4 Pack", "12 Pack"),
        ("humane", "reusable", "snap"),
    ),
    _T(
        "propane_tank",
        "garden",
        ("propane tank", "propane cylinder", "lp tank", "gas tank"),
        ("white", "silver"),
        ("steel",),
        ("20 lb.", "30 lb."),
        ("with gauge", "refillable"),
    ),
    _T(
        "wheelbarrow",
        "garden",
        ("wheelbarrow", "garden cart", "wheel barrow"),
        ("green", "red", "black"),
        ("steel", "plastic"),
        ("6 cu. ft.", "8 cu. ft."),
        ("with flat free tire",),
    ),
    _T(
        "leaf_blower",
        "garden",
        ("leaf blower", "blower", "yard blower"),
        ("green", "orange"),
        (),
        ("40 Volt", "60 Volt"),
        ("cordless", "gas", "with battery"),
    ),
    # lighting
    _T(
        "light_bulb",
        "lighting",
        ("light bulb", "led bulb", "lightbulb", "bulb"),
        (),
        (),
        ("40 Watt", "60 Watt", "100 Watt"),
        ("dimmable", "daylight", "soft white", "4 Pack"),
    ),
    _T(
        "ceiling_fan",
        "lighting",
        ("ceiling fan", "fan", "indoor ceiling fan"),
        ("white", "brushed_nickel", "oil_rubbed_bronze"),
        (),
        ("44 in.", "52 in."),
        ("with light kit", "with remote"),
    ),
    _T(
        "floor_lamp",
        "lighting",
        ("floor lamp", "standing lamp", "torchiere lamp"),
        ("black", "brushed_nickel", "white"),
        ("steel", "wood"),
        ("60 in.", "72 in."),
        ("dimmable", "with shelves"),
    ),
    _T(
        "desk_lamp",
        "lighting",
        ("desk lamp", "table lamp", "reading lamp", "office lamp"),
        ("black", "white", "silver"),
        ("steel", "glass"),
        (),
        ("with usb port", "dimmable", "adjustable"),
    ),
    _T(
        "pendant_light",
        "lighting",
        ("pendant light", "hanging light", "pendant lamp", "pendant"),
        ("black", "brushed_nickel", "oil_rubbed_bronze"),
        ("glass", "steel"),
        (),
        ("with clear glass shade",),
    ),
    _T(
        "flood_light",
        "lighting",
        ("flood light", "floodlight", "security light", "outdoor flood light"),
        ("black", "white", "bronze"),
        ("aluminum",),
        ("30 Watt", "50 Watt"),
        ("with motion sensor", "dusk to dawn"),
    ),
    _T(
        "under_cabinet_light",
        "lighting",
        ("under cabinet light", "under cabinet lighting", "cabinet light", "puck light"),
        ("white", "black"),
        (),
        ("12 in.", "24 in."),
        ("plug-in", "with remote"),
    ),
    # paint
    _T(
        "interior_paint",
        "paint",
        ("interior paint", "wall paint", "paint", "latex paint"),
        ("white", "gray", "beige", "blue"),
        (),
        ("1 qt.", "1 gal.", "5 gal."),
        ("eggshell", "semi-gloss", "flat", "paint and primer"),
    ),
    _T(
        "spray_paint",
        "paint",
        ("spray paint", "aerosol paint", "paint spray"),
        ("black", "white", "red", "silver"),
        (),
        ("12 oz.",),
        ("gloss", "matte", "rust protection"),
    ),
    _T(
        "paint_roller",
        "paint",
        ("paint roller", "roller cover", "paint roller cover", "roller"),
        (),
        ("microfiber", "fabric"),
        ("9 in.", "4 in."),
        ("3-pack", "with frame"),
    ),
    _T(
        "paint_brush",
        "paint",
        ("paint brush", "paintbrush", "angled brush", "brush"),
        (),
        ("nylon",),
        ("2 in.", "3 in."),
        ("angled sash", "3-pack"),
    ),
    _T(
        "primer",
        "paint",
        ("primer", "paint primer", "primer sealer", "undercoat"),
        ("white", "gray"),
        (),
        ("1 qt.", "1 gal."),
        ("stain blocking", "bonding"),
    ),
    _T(
        "wood_stain",
        "paint",
        ("wood stain", "stain", "deck stain"),
        ("brown", "espresso", "red"),
        (),
        ("1 qt.", "1 gal."),
        ("semi-transparent", "solid color"),
    ),
    _T(
        "painters_tape",
        "paint",
        ("painters tape", "masking tape", "blue tape"),
        ("blue",),
        (),
        ("60 yd.",),
        ("multi-surface", "3-pack"),
    ),
    # tools
    _T(
        "power_drill",
        "tools",
        ("power drill", "cordless drill", "drill", "drill driver"),
        ("yellow", "black"),
        (),
        ("18 Volt", "20 Volt"),
        ("with battery", "brushless", "kit"),
    ),
    _T(
        "drill_bit_set",
        "tools",
        ("drill bit set", "drill bits", "bit set"),
        (),
        ("titanium", "cobalt"),
        ("1/4 in.", "3/8 in."),
        ("29-piece", "with case"),
    ),
    _T(
        "circular_saw",
        "tools",
        ("circular saw", "skill saw", "circ saw"),
        ("yellow", "red"),
        (),
        ("7-1/4 in.",),
        ("cordless", "with laser guide"),
    ),
    _T(
        "sanding_pad",
        "tools",
        ("sanding pad", "sanding disc", "sandpaper", "sand paper"),
        (),
        (),
        ("5 in.",),
        ("80 grit", "120 grit", "hook and loop"),
    ),
    _T(
        "tool_box",
        "tools",
        ("tool box", "toolbox", "tool chest", "tool storage"),
        ("red", "black"),
        ("steel", "plastic"),
        ("19 in.", "26 in."),
        ("with drawers", "rolling"),
    ),
    _T(
        "socket_set",
        "tools",
        ("socket set", "socket wrench set", "ratchet set", "sockets"),
        (),
        ("chrome_vanadium",),
        ("1/4 in.", "3/8 in.", "1/2 in."),
        ("metric", "sae", "with case"),
    ),
    _T(
        "ladder",
        "tools",
        ("step ladder", "ladder", "stepladder", "extension ladder"),
        (),
        ("aluminum", "fiberglass"),
        ("6 ft.", "8 ft.", "24 ft."),
        ("with tool tray",),
    ),
)
TYPES_BY_KEY = {t.key: t for t in PRODUCT_TYPES}

# Colour and material keys -> surface forms (catalogue form first, then shopper variants).
COLOURS = {
    "white": ("white", "wht"),
    "black": ("black", "blk"),
    "gray": ("gray", "grey"),
    "brown": ("brown",),
    "beige": ("beige", "bisque"),
    "blue": ("blue",),
    "red": ("red",),
    "green": ("green",),
    "yellow": ("yellow",),
    "purple": ("purple",),
    "orange": ("orange",),
    "silver": ("silver",),
    "espresso": ("espresso", "dark brown"),
    "chrome": ("chrome", "polished chrome"),
    "brushed_nickel": ("brushed nickel", "satin nickel", "bn"),
    "oil_rubbed_bronze": ("oil rubbed bronze", "orb", "oil bronze"),
    "bronze": ("bronze",),
}
MATERIALS = {
    "wood": ("wood", "wooden", "solid wood"),
    "oak": ("oak", "solid oak"),
    "steel": ("steel", "metal"),
    "stainless_steel": ("stainless steel", "stainless", "ss"),
    "aluminum": ("aluminum", "aluminium", "alum"),
    "plastic": ("plastic", "poly", "resin"),
    "brass": ("brass", "solid brass"),
    "leather": ("leather", "bonded leather"),
    "fabric": ("fabric", "upholstered", "cloth"),
    "mesh": ("mesh",),
    "glass": ("glass", "tempered glass"),
    "ceramic": ("ceramic", "porcelain"),
    "cast_iron": ("cast iron", "iron"),
    "rubber": ("rubber",),
    "vinyl": ("vinyl",),
    "copper": ("copper",),
    "granite_composite": ("granite composite", "granite"),
    "microfiber": ("microfiber", "microfibre"),
    "nylon": ("nylon", "synthetic"),
    "titanium": ("titanium",),
    "cobalt": ("cobalt",),
    "fiberglass": ("fiberglass", "fibreglass"),
    "chrome_vanadium": ("chrome vanadium", "cr-v", "chrome vanadium steel"),
}
# Units: catalogue spelling first, then shopper spellings; "{n}" is the number.
UNITS = {
    "in.": ("{n} in.", "{n} in", "{n} inch", "{n}-inch", "{n}in", "{n} inches"),
    "ft.": ("{n} ft.", "{n} ft", "{n} foot", "{n}-ft", "{n}ft", "{n} feet"),
    "yd.": ("{n} yd.", "{n} yd", "{n} yards"),
    "gal.": ("{n} gal.", "{n} gal", "{n} gallon", "{n}-gallon"),
    "qt.": ("{n} qt.", "{n} qt", "{n} quart"),
    "oz.": ("{n} oz.", "{n} oz", "{n} ounce", "{n}oz"),
    "lb.": ("{n} lb.", "{n} lb", "{n} lbs", "{n} pound", "{n}lb"),
    "cu. ft.": ("{n} cu. ft.", "{n} cu ft", "{n} cubic feet", "{n} cu.ft."),
    "mm": ("{n} mm", "{n}mm"),
    "CFM": ("{n} CFM", "{n}cfm", "{n} cfm"),
    "Watt": ("{n}-Watt", "{n} watt", "{n}w", "{n} watts", "{n}-watt"),
    "Volt": ("{n}-Volt", "{n}v", "{n} volt", "{n}-volt"),
    "Pack": ("{n}-Pack", "{n} pack", "{n}pk", "{n}-pack", "pack of {n}"),
    "Outlet": ("{n}-Outlet", "{n} outlet", "{n}-outlet", "{n} plug"),
}
# Phrase-level abbreviations shoppers type (applied to feature phrases).
ABBREVIATIONS = {
    "with ": ("w/ ", "w/", ""),
    "heavy duty": ("hd", "heavy-duty"),
    "indoor/outdoor": ("outdoor", "indoor outdoor"),
    "self-propelled": ("self propelled",),
    "pull-down": ("pull down", "pulldown"),
    "semi-gloss": ("semi gloss",),
    "1-year subscription": ("1 year", "1yr subscription"),
    "soft close": ("soft-close", "slow close"),
    "rechargeable": ("recharge",),
    "high pressure": ("high-pressure",),
    "with usb ports": ("usb",),
}

STOPWORDS = frozenset({"with", "w", "and", "the", "for", "of", "a", "to", "in", "on", "your", "this", "it", "is"})
_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric runs: the world's reference tokenisation for overlap."""
    return _TOKEN.findall(text.lower())


def content_tokens(text: str) -> list[str]:
    return [t for t in tokens(text) if t not in STOPWORDS]


def _ambiguous_words() -> tuple[str, ...]:
    cats: dict[str, set[str]] = {}
    for t in PRODUCT_TYPES:
        for name in t.names:
            for w in content_tokens(name):
                cats.setdefault(w.rstrip("s") if len(w) > 3 else w, set()).add(t.category)
    return tuple(sorted(w for w, c in cats.items() if len(c) > 1))


AMBIGUOUS_WORDS: tuple[str, ...] = _ambiguous_words()
"""Stems (a trailing ``s`` dropped) of name words used by product types of two or more categories."""
