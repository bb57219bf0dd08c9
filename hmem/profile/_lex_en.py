"""English word lists the offline profile rules look words up in: jobs, fields of work,
animals, relations, languages, nationalities, places, time zones, diet labels, holidays.

Written as general lexicons (how people commonly name these things), never as the
phrases of any one evaluation sentence. Lower case; multi-word entries use spaces.

Example::

    >>> "greyhound" in ANIMALS, DEMONYMS["dutch"], "pacific time" in TIMEZONES
    (True, 'Netherlands', True)
"""

from __future__ import annotations

__all__ = [
    "ANIMALS",
    "CHILD_WORDS",
    "COUNTRIES",
    "DEMONYMS",
    "DIET_LABELS",
    "DIET_SPELLINGS",
    "FAMILY_WORDS",
    "FIELDS",
    "HOLIDAYS",
    "JOBS",
    "LANGUAGES",
    "MONTHS",
    "NOT_NAMES",
    "OTHER_PEOPLE",
    "PARTNER_WORDS",
    "PLACES",
    "SCHOOL_WORDS",
    "STUDY_YEARS",
    "TIMEZONES",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(w.strip().replace("_", " ") for w in text.split() if w.strip())


#: Job titles: the head of an occupation phrase ("software engineer", "pastry chef").
JOBS = _words("""
engineer developer programmer coder designer architect scientist researcher analyst consultant manager
director executive administrator admin assistant secretary receptionist accountant auditor bookkeeper banker
trader broker economist actuary lawyer attorney solicitor barrister paralegal judge clerk notary doctor
physician surgeon dentist gp nurse midwife paramedic pharmacist therapist physiotherapist physio psychologist
psychiatrist counselor counsellor optometrist optician radiographer radiologist vet veterinarian caregiver
carer teacher lecturer professor tutor instructor coach trainer librarian principal headteacher headmaster
student undergrad undergraduate postdoc writer author journalist reporter editor copywriter translator
interpreter illustrator artist painter photographer videographer filmmaker animator musician singer drummer
guitarist pianist violinist composer producer dj actor actress dancer comedian chef cook baker barista
bartender waiter waitress butcher farmer gardener landscaper florist electrician plumber carpenter builder
mechanic technician welder machinist decorator cleaner janitor housekeeper nanny driver pilot steward
stewardess sailor soldier officer cop detective firefighter fireman guard entrepreneur founder co-founder
cofounder ceo cto cfo coo cmo cio vp pm freelancer contractor marketer recruiter salesperson salesman
saleswoman realtor agent cashier shopkeeper dietitian nutritionist biologist chemist physicist mathematician
statistician geologist astronomer sysadmin devops sre tester streamer youtuber influencer blogger podcaster
creator homemaker housewife househusband retiree pensioner intern apprentice courier postman postwoman miner
fisherman rancher surveyor planner curator archivist historian pastor priest rabbi imam monk nun diplomat
politician mayor councillor councilor ambassador dean educator choreographer stylist hairdresser barber
beautician model athlete footballer referee orthodontist anaesthetist anesthesiologist cardiologist
pediatrician paediatrician obstetrician gynecologist dermatologist oncologist neurologist registrar locum
worker servant investor owner operator dispatcher inspector officer supervisor foreman lifeguard ranger
zookeeper groomer practitioner paramedic quant sommelier jeweler jeweller tailor seamstress potter sculptor engraver printer
machinist electrician handyman roofer bricklayer mason logistician coordinator specialist strategist
dev teller self-employed hygienist trucker
""")
#: Fields of work: "I work in marketing", "I'm in HR", "做 audit".
FIELDS = _words("""
hr marketing sales finance it tech accounting consulting operations engineering design recruiting recruitment
pr logistics insurance banking healthcare education retail hospitality construction publishing journalism
law medicine research academia procurement compliance audit admin administration advertising fintech
real_estate customer_service supply_chain human_resources software data_science cybersecurity security
""")
#: Student years: "a junior at NYU", "second year student".
STUDY_YEARS = _words("freshman sophomore junior senior fresher")
SCHOOL_WORDS = _words("university college school institute academy polytechnic conservatory tech")

ANIMALS = _words("""
dog cat puppy pup kitten kitty hamster rabbit bunny parrot budgie cockatiel parakeet canary finch lovebird
goldfish fish betta turtle tortoise guinea_pig gerbil rat mouse ferret chinchilla hedgehog horse pony donkey
goat chicken hen duck snake python gecko lizard iguana bearded_dragon axolotl frog tarantula bird
labrador lab retriever golden_retriever labradoodle goldendoodle cavapoo cockapoo greyhound whippet poodle
beagle husky corgi dachshund chihuahua pug bulldog french_bulldog frenchie german_shepherd shepherd collie
border_collie spaniel cocker_spaniel springer_spaniel terrier jack_russell schnauzer shih_tzu maltese
pomeranian rottweiler doberman great_dane samoyed shiba shiba_inu akita sheepdog mutt staffie
tabby ragdoll siamese maine_coon bengal sphynx british_shorthair calico tomcat
""")
PARTNER_WORDS = _words("""
wife husband spouse partner girlfriend boyfriend gf bf fiancee fiancée fiance fiancé hubby missus
""")
CHILD_WORDS = _words("""son sons daughter daughters kid kids child children little_one little_ones baby toddler twins
little_girl little_boy baby_girl baby_boy""")
FAMILY_WORDS = _words("""
mom mum mother mommy mummy mama dad father daddy papa parents brother brothers sister sisters sibling
siblings grandma grandmother granny grandpa grandfather grandparents aunt uncle cousin stepdad stepfather
stepmom stepmum stepmother stepbrother stepsister half-brother half-sister
""")
#: People who are not the user (a clause about them says nothing about the user).
OTHER_PEOPLE = _words("""
friend friends roommate roommates flatmate housemate boss manager colleague colleagues coworker coworkers
co-worker neighbour neighbor neighbours neighbors ex landlord landlady teacher classmate classmates client
clients customer doctor coach mentor buddy pal bestie bff
""")

LANGUAGES = _words("""
english mandarin chinese cantonese hokkien hakka shanghainese taiwanese japanese korean french german spanish
italian portuguese russian arabic hindi urdu bengali punjabi tamil telugu marathi gujarati kannada malayalam
nepali sinhala thai vietnamese malay indonesian tagalog filipino turkish persian farsi hebrew greek polish
dutch swedish norwegian danish finnish icelandic czech slovak hungarian romanian bulgarian serbian croatian
bosnian slovenian ukrainian lithuanian latvian estonian swahili yoruba igbo hausa zulu xhosa afrikaans
amharic somali catalan basque galician welsh irish gaelic latin asl bsl esperanto kurdish pashto armenian
georgian albanian mongolian tibetan uyghur khmer lao burmese cebuano ilocano visayan bisaya wolof twi kinyarwanda
quechua maori samoan tongan hawaiian malagasy creole patois tigrinya oromo lingala shona sesotho setswana
""")

#: Demonym → country (nationality values are countries; the table also accepts demonyms).
DEMONYMS: dict[str, str] = {
    "american": "United States", "british": "United Kingdom", "english": "England", "scottish": "Scotland",
    "welsh": "Wales", "irish": "Ireland", "canadian": "Canada", "australian": "Australia", "aussie": "Australia",
    "kiwi": "New Zealand", "new zealander": "New Zealand", "chinese": "China", "japanese": "Japan",
    "korean": "South Korea", "south korean": "South Korea", "indian": "India", "pakistani": "Pakistan",
    "bangladeshi": "Bangladesh", "sri lankan": "Sri Lanka", "nepali": "Nepal", "nepalese": "Nepal",
    "thai": "Thailand", "vietnamese": "Vietnam", "malaysian": "Malaysia", "singaporean": "Singapore",
    "indonesian": "Indonesia", "filipino": "Philippines", "filipina": "Philippines", "taiwanese": "Taiwan",
    "french": "France", "german": "Germany", "dutch": "Netherlands", "belgian": "Belgium", "swiss": "Switzerland",
    "austrian": "Austria", "italian": "Italy", "spanish": "Spain", "portuguese": "Portugal", "greek": "Greece",
    "swedish": "Sweden", "swede": "Sweden", "norwegian": "Norway", "danish": "Denmark", "dane": "Denmark",
    "finnish": "Finland", "icelandic": "Iceland", "polish": "Poland", "czech": "Czech Republic",
    "slovak": "Slovakia", "hungarian": "Hungary", "romanian": "Romania", "bulgarian": "Bulgaria",
    "serbian": "Serbia", "croatian": "Croatia", "ukrainian": "Ukraine", "russian": "Russia",
    "lithuanian": "Lithuania", "latvian": "Latvia", "estonian": "Estonia", "turkish": "Turkey",
    "israeli": "Israel", "iranian": "Iran", "iraqi": "Iraq", "lebanese": "Lebanon", "syrian": "Syria",
    "jordanian": "Jordan", "saudi": "Saudi Arabia", "emirati": "United Arab Emirates", "egyptian": "Egypt",
    "moroccan": "Morocco", "nigerian": "Nigeria", "ghanaian": "Ghana", "kenyan": "Kenya",
    "ethiopian": "Ethiopia", "south african": "South Africa", "mexican": "Mexico", "brazilian": "Brazil",
    "argentinian": "Argentina", "argentine": "Argentina", "chilean": "Chile", "colombian": "Colombia",
    "peruvian": "Peru", "venezuelan": "Venezuela", "cuban": "Cuba", "jamaican": "Jamaica",
    "puerto rican": "Puerto Rico", "dominican": "Dominican Republic", "mongolian": "Mongolia",
}  # fmt: skip
COUNTRIES = frozenset(c.lower() for c in DEMONYMS.values()) | _words("usa us uk america britain holland")

#: Places written in lower case are accepted only from this list (capitalised ones need no list).
PLACES = COUNTRIES | _words("""
alabama alaska arizona arkansas california colorado connecticut delaware florida georgia hawaii idaho illinois
indiana iowa kansas kentucky louisiana maine maryland massachusetts michigan minnesota mississippi missouri
montana nebraska nevada new_hampshire new_jersey new_mexico new_york north_carolina north_dakota ohio oklahoma
oregon pennsylvania rhode_island south_carolina south_dakota tennessee texas utah vermont virginia washington
west_virginia wisconsin wyoming ontario quebec alberta manitoba saskatchewan
london manchester birmingham leeds liverpool glasgow edinburgh bristol cardiff belfast dublin cork oxford
cambridge brighton paris berlin munich hamburg vienna zurich geneva amsterdam rotterdam brussels madrid
barcelona lisbon porto rome milan naples athens stockholm oslo copenhagen helsinki warsaw krakow prague
budapest moscow istanbul dubai cairo lagos nairobi johannesburg toronto vancouver montreal ottawa calgary
boston chicago seattle portland austin denver houston dallas atlanta miami philadelphia phoenix brooklyn
queens manhattan sf nyc la tokyo osaka kyoto seoul busan beijing shanghai shenzhen guangzhou hangzhou
chengdu wuhan hong_kong taipei singapore bangkok hanoi manila jakarta mumbai delhi bangalore bengaluru
chennai hyderabad pune kolkata karachi lahore sydney melbourne brisbane perth adelaide auckland wellington
mexico_city sao_paulo rio buenos_aires lima bogota santiago san_diego san_francisco san_jose los_angeles
new_york_city las_vegas new_orleans salt_lake_city kansas_city st_louis detroit cleveland pittsburgh baltimore
minneapolis nashville charlotte raleigh orlando tampa sacramento oakland honolulu anchorage the_bay_area
bay_area silicon_valley long_island jersey_city hong_kong kuala_lumpur ho_chi_minh_city tel_aviv cape_town
rio_de_janeiro st_petersburg abu_dhabi
aberdeen dundee swansea newcastle sheffield nottingham leicester southampton portsmouth plymouth norwich exeter
coventry derby sunderland inverness galway limerick lyon marseille toulouse bordeaux lille frankfurt cologne
stuttgart dusseldorf leipzig dresden antwerp ghent utrecht eindhoven the_hague gothenburg malmo bergen aarhus
tallinn riga vilnius bratislava ljubljana zagreb belgrade bucharest kyiv kiev lviv minsk seville valencia
bilbao malaga granada florence venice turin bologna genoa palermo thessaloniki ankara izmir beirut amman doha
riyadh jeddah muscat kuwait tehran baghdad karachi islamabad dhaka kathmandu colombo yangon phnom_penh
vientiane hanoi saigon cebu davao taichung kaohsiung macau shenzhen xiamen nanjing suzhou tianjin chongqing
xian qingdao dalian harbin kunming sapporo fukuoka nagoya yokohama kobe incheon daegu accra abuja kampala
kigali addis_ababa dar_es_salaam casablanca marrakech tunis algiers dakar luanda harare lusaka durban
montevideo quito caracas havana panama_city guadalajara monterrey tijuana san_juan edmonton winnipeg halifax
saskatoon fresno tucson albuquerque el_paso boise spokane tacoma omaha
milwaukee indianapolis columbus cincinnati louisville memphis richmond buffalo rochester hartford
canberra hobart gold_coast christchurch dunedin
""")

TIMEZONES = _words("""
pacific_time mountain_time central_time eastern_time atlantic_time pacific mountain central eastern
pt pst pdt mt mst mdt ct cst cdt et est edt akst hst gmt bst utc cet cest eet eest wet ist jst kst sgt hkt
aest aedt acst awst nzst nzdt uk_time beijing_time china_time london_time paris_time tokyo_time
""")

DIET_LABELS = _words("""
vegetarian veggie vegan pescatarian pescetarian flexitarian keto paleo halal kosher gluten-free dairy-free
plant-based lacto-vegetarian whole30 carnivore vegeterian vegitarian vegatarian pescitarian
""")
#: Diet words as typed → the label they mean (common misspellings; coeliac means a gluten-free diet).
DIET_SPELLINGS = {"vegeterian": "vegetarian", "vegitarian": "vegetarian", "vegatarian": "vegetarian",
                  "pescitarian": "pescatarian", "coeliac": "gluten-free", "celiac": "gluten-free"}

MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
#: Fixed-date days people give as a birthday ("born on Valentine's Day").
HOLIDAYS = {
    "valentine's day": "02-14", "valentines day": "02-14", "christmas": "12-25", "christmas day": "12-25",
    "christmas eve": "12-24", "new year's day": "01-01", "new years day": "01-01", "new year's eve": "12-31",
    "halloween": "10-31", "st patrick's day": "03-17", "st. patrick's day": "03-17", "april fools' day": "04-01",
    "april fools day": "04-01", "april fool's day": "04-01", "the fourth of july": "07-04", "fourth of july": "07-04",
    "independence day": "07-04", "boxing day": "12-26", "leap day": "02-29", "pi day": "03-14",
}  # fmt: skip

#: Capitalised words after "I'm" that are not names.
NOT_NAMES = _words("""
fine good great back here sorry ready okay ok new home busy tired happy glad well sure not so just also still
really actually currently going trying looking thinking learning working living staying free single married
divorced retired pregnant sick ill stuck lost done curious confused worried excited late early bilingual
fluent allergic vegan vegetarian left right usually always never gonna basically literally totally
jewish muslim christian catholic protestant buddhist hindu sikh mormon atheist agnostic black white asian latina
latino hispanic european african arab mixed biracial gen millennial boomer lgbtq queer gay trans adhd autistic
crazy lazy silly stupid
weird paranoid picky naive old-fashioned biased cynical skeptical sceptical
aries taurus gemini virgo libra scorpio sagittarius capricorn aquarius pisces
""") | frozenset(DEMONYMS) | LANGUAGES | TIMEZONES
