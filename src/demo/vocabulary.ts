/**
 * Word lists for synthetic evidence. Everything is lower-case ASCII letters
 * unless noted, so generated handles, hosts and channel names stay inside
 * the VPA and URL character sets without escaping. Brand names appear only
 * as the targets that fake pages imitate.
 */

/**
 * PSP handles (the part after `@`) with rough relative shares of personal
 * VPAs: PhonePe and Google Pay dominate, Paytm follows, bank and wallet
 * handles are a long tail.
 */
export const PERSONAL_PROVIDERS: ReadonlyArray<readonly [string, number]> = [
  // PhonePe
  ['ybl', 260],
  ['ibl', 70],
  ['axl', 70],
  // Google Pay
  ['okaxis', 120],
  ['oksbi', 90],
  ['okhdfcbank', 75],
  ['okicici', 70],
  // Paytm
  ['paytm', 60],
  ['ptyes', 14],
  ['pthdfc', 9],
  ['ptaxis', 8],
  ['ptsbi', 8],
  // Amazon Pay
  ['apl', 18],
  ['yapl', 5],
  ['rapl', 2],
  // bank apps and BHIM
  ['upi', 14],
  ['sbi', 8],
  ['axisbank', 6],
  ['icici', 6],
  ['hdfcbank', 6],
  ['kotak', 5],
  ['idfcbank', 3],
  ['indus', 2],
  ['yesbank', 2],
  ['pnb', 2],
  ['cnrb', 1.5],
  ['barodampay', 1.5],
  ['aubank', 1],
  ['rbl', 1],
  ['fbl', 1.5],
  ['federal', 1],
  ['kmbl', 1],
  // wallets, telecom and newer apps
  ['ikwik', 3],
  ['freecharge', 2.5],
  ['axisb', 3],
  ['naviaxis', 2.5],
  ['superyes', 1.5],
  ['jupiteraxis', 1],
  ['fam', 1],
  ['airtel', 3],
  ['jio', 2],
  // WhatsApp Pay
  ['waaxis', 1],
  ['wahdfcbank', 0.8],
  ['waicici', 0.6],
  ['wasbi', 0.6],
];

export const FIRST_NAMES: readonly string[] = [
  'aarav', 'aditi', 'aditya', 'ajay', 'akash', 'akshay', 'alok', 'aman', 'amit', 'amrita', 'anand', 'anil', 'anjali',
  'ankit', 'ankita', 'anuj', 'anupam', 'anushka', 'arjun', 'arun', 'aryan', 'ashish', 'ashok', 'ayesha', 'babita',
  'bharat', 'bhavna', 'chetan', 'deepak', 'deepika', 'dev', 'dinesh', 'divya', 'farhan', 'gaurav', 'geeta', 'gopal',
  'govind', 'hardik', 'harish', 'harpreet', 'hemant', 'imran', 'ishaan', 'jagdish', 'jaspreet', 'jitendra', 'jyoti',
  'kajal', 'kamal', 'karan', 'kavita', 'kiran', 'krishna', 'kunal', 'lakshmi', 'lalit', 'mahesh', 'manish', 'manoj',
  'meena', 'mohan', 'mohit', 'mukesh', 'naveen', 'neha', 'nikhil', 'nisha', 'nitin', 'pankaj', 'pooja', 'pradeep',
  'prakash', 'pramod', 'prashant', 'praveen', 'priya', 'priyanka', 'rahul', 'raj', 'rajesh', 'rakesh', 'ramesh',
  'ravi', 'rekha', 'rinku', 'ritu', 'rohit', 'sachin', 'sagar', 'sahil', 'sandeep', 'sanjay', 'santosh', 'sapna',
  'sarita', 'shivam', 'shubham', 'simran', 'sneha', 'sonu', 'sudhir', 'sumit', 'sunil', 'sunita', 'suresh', 'swati',
  'tanvi', 'tarun', 'uday', 'umesh', 'varun', 'vijay', 'vikas', 'vikram', 'vinod', 'vishal', 'yash', 'yogesh',
  'zoya', 'abdul', 'irfan', 'salman', 'sameer', 'shahid', 'wasim', 'joseph', 'thomas', 'anthony', 'suman', 'bablu',
  'pintu', 'guddu', 'raju', 'munna', 'bittu', 'pappu', 'lokesh', 'venkat', 'srinivas', 'murugan', 'karthik',
  'lakshman', 'senthil', 'balaji', 'naresh', 'suraj', 'ritesh', 'abhishek', 'saurabh', 'vivek', 'rupesh',
];

export const LAST_NAMES: readonly string[] = [
  'agarwal', 'ahmed', 'ali', 'bansal', 'banerjee', 'bhatt', 'bhatia', 'biswas', 'chauhan', 'chaudhary', 'das',
  'dubey', 'dutta', 'gandhi', 'ghosh', 'goyal', 'gupta', 'iyer', 'jadhav', 'jain', 'joshi', 'kapoor', 'khan',
  'kulkarni', 'kumar', 'kumari', 'mehta', 'mishra', 'mondal', 'nair', 'pandey', 'patel', 'patil', 'pillai',
  'prasad', 'rajput', 'rao', 'rathore', 'reddy', 'saha', 'saini', 'saxena', 'shah', 'sharma', 'shaikh', 'shetty',
  'shukla', 'singh', 'sinha', 'srivastava', 'thakur', 'tiwari', 'tripathi', 'verma', 'yadav', 'yadava', 'naidu',
  'menon', 'pawar', 'more', 'shinde', 'gowda', 'hegde', 'kaur', 'gill', 'sandhu', 'sethi', 'arora', 'malhotra',
  'khanna', 'chopra', 'qureshi', 'ansari', 'siddiqui', 'mallick', 'paul', 'sarkar', 'roy', 'sen', 'bose', 'nayak',
  'behera', 'sahu', 'mahato', 'meena', 'choudhury', 'rawat', 'negi', 'bisht', 'thapa', 'lal', 'ram', 'paswan',
  'manjhi', 'kushwaha', 'maurya', 'nishad', 'rathod', 'solanki', 'parmar', 'vaghela', 'desai', 'bhosale',
];

export const CITIES: readonly string[] = [
  'delhi', 'mumbai', 'pune', 'jaipur', 'lucknow', 'patna', 'kolkata', 'chennai', 'hyderabad', 'bangalore',
  'ahmedabad', 'surat', 'indore', 'bhopal', 'nagpur', 'kanpur', 'noida', 'gurgaon', 'ranchi', 'guwahati',
  'jamtara', 'nuh', 'bharatpur', 'mathura', 'alwar', 'deoghar', 'kochi', 'vizag', 'raipur', 'ludhiana',
];

/** Words that betting and gaming sites are named from. */
export const GAMBLING_WORDS: readonly string[] = [
  'royal', 'lucky', 'king', 'ace', 'star', 'jackpot', 'mahadev', 'raja', 'rani', 'teenpatti', 'rummy', 'dream',
  'fair', 'win', 'jeet', 'khel', 'ludo', 'satta', 'matka', 'shiv', 'tiger', 'lion', 'gold', 'diamond', 'crown',
  'victory', 'mega', 'super', 'cric', 'sixer', 'wicket', 'daman', 'tiranga', 'bigwin', 'colour', 'aviator', 'spin',
  'dice', 'casino', 'vegas', 'lotus', 'laser', 'sky', 'reddy', 'anna', 'golden', 'panther', 'cobra', 'maharaja',
  'bazigar', 'sultan', 'kalyan', 'milan', 'bombay', 'goa', 'ganga', 'fortune', 'prime', 'turbo', 'rocket',
];

export const GAMBLING_SUFFIXES: readonly string[] = [
  'bet', 'exch', 'book', 'play', 'games', 'club', 'win', 'casino', 'rummy', 'patti', 'matka', 'sports', 'xch',
];

export const GAMBLING_TLDS: readonly string[] = [
  'com', 'com', 'com', 'in', 'in', 'net', 'vip', 'club', 'live', 'app', 'xyz', 'co', 'bet', 'win', 'fun', 'online',
  'site', 'pro', 'games',
];

export const GAMBLING_PATHS: readonly string[] = [
  '/deposit', '/deposit', '/pay', '/pay', '/add-money', '/wallet/deposit', '/recharge', '/cashier/deposit',
  '/payment/upi', '/user/recharge', '/topup', '/deposit/upi', '/m/deposit', '/account/add-funds',
];

/** Path and query-parameter name; the page's number is appended as the value. */
export const GAMBLING_QUERY_PATHS: readonly string[] = [
  '/deposit?agent=', '/pay?order=', '/recharge?uid=', '/api/pay/upi?merchantOrderId=', '/pay/index.html?tid=',
  '/cashier?ref=', '/wallet/deposit?channel=upi&id=',
];

/** Brands that phishing pages imitate. */
export const PHISHING_BRANDS: readonly string[] = [
  'sbi', 'sbi', 'hdfc', 'icici', 'axis', 'kotak', 'pnb', 'bob', 'canara', 'yono', 'paytm', 'phonepe', 'npci',
  'incometax', 'epfo', 'uidai', 'fastag', 'indiapost', 'bses', 'tatapower', 'mseb', 'jio', 'airtel', 'irctc',
  'bluedart', 'dtdc', 'cred', 'amazon', 'flipkart',
];

export const PHISHING_WORDS: readonly string[] = [
  'kyc', 'kycupdate', 'update', 'verify', 'rewards', 'refund', 'points', 'redeem', 'pan', 'panlink', 'aadhaar',
  'unblock', 'netbanking', 'care', 'support', 'secure', 'login', 'reactivate', 'bonus', 'cashback', 'billpay',
  'delivery', 'tracking', 'challan', 'penalty', 'claim', 'yono', 'online', 'helpdesk',
];

export const PHISHING_TLDS: readonly string[] = [
  'com', 'in', 'co.in', 'net', 'online', 'site', 'info', 'top', 'xyz', 'live', 'shop', 'click', 'support', 'cc',
  'web.app', 'netlify.app', 'vercel.app', 'github.io', 'weebly.com', '000webhostapp.com', 'firebaseapp.com',
];

export const PHISHING_PATHS: readonly string[] = [
  '/kyc/update', '/verify', '/login', '/reward/claim', '/refund/status', '/pan-update', '/secure/auth',
  '/customer/reactivate', '/index.html', '/pay/fee', '/challan/pay', '/redeem-points', '/account/unblock',
  '/delivery/reschedule', '/aadhaar-link', '/',
];

export const PHISHING_QUERY_PATHS: readonly string[] = [
  '/refund.php?id=', '/claim?token=', '/pay?ref=', '/kyc/verify.php?session=', '/reward?cid=', '/upi/pay?txn=',
];

export const JOB_WORDS: readonly string[] = [
  'parttime', 'workfromhome', 'wfh', 'dailytask', 'taskjob', 'hotelreview', 'likeandearn', 'dataentry', 'earn',
  'homejob', 'reviewtask', 'ratingjob', 'onlinejob', 'easyincome', 'dailypay', 'prepaidtask', 'mallorder',
];

export const INVEST_WORDS: readonly string[] = [
  'crypto', 'forex', 'ipo', 'stocktips', 'trading', 'profit', 'doublemoney', 'mining', 'usdt', 'tradepro',
  'wealth', 'fund', 'invest', 'signals', 'niftytips', 'optionking', 'capital', 'bullrun', 'sharemarket', 'gold',
];

export const LOAN_WORDS: readonly string[] = [
  'rupeeflash', 'quickcash', 'loanwala', 'paisa', 'udhaar', 'cashnow', 'instantloan', 'easyloan', 'minutecash',
  'creditbee', 'loanmitra', 'cashguru', 'rupeebox', 'kreditpe', 'moneytap', 'fastrupee', 'handycash', 'payday',
];

/** Lenders whose names fake loan-approval pages borrow. */
export const NBFC_NAMES: readonly string[] = [
  'bajajfinserv', 'bajaj-finance', 'tatacapital', 'muthoot', 'muthootfinance', 'mahindrafinance', 'hdbfinancial',
  'adityabirlacapital', 'lendingkart', 'homecredit', 'piramalfinance', 'shriramfinance', 'ltfinance', 'iifl',
  'manappuram', 'poonawalla', 'cholamandalam', 'fullerton', 'indiabulls', 'kreditbee',
];

export const SCAM_TLDS: readonly string[] = [
  'com', 'com', 'in', 'co.in', 'net', 'online', 'site', 'vip', 'top', 'xyz', 'live', 'club', 'app', 'pro', 'cc',
];

export const JOB_PATHS: readonly string[] = [
  '/register', '/task/recharge', '/vip/upgrade', '/wallet/recharge', '/join', '/user/deposit', '/task/prepaid',
];

export const INVEST_PATHS: readonly string[] = [
  '/invest', '/recharge', '/plans', '/usdt/buy', '/ipo/apply', '/deposit', '/vip/plans', '/trade/fund',
];

export const LOAN_PATHS: readonly string[] = [
  '/loan/processing-fee', '/apply', '/repay', '/verification-fee', '/loan/status', '/emi/pay', '/gst-charge',
];

export const NBFC_PATHS: readonly string[] = [
  '/loan-approval', '/processing-fee', '/insurance-charge', '/disbursal', '/pre-approved-offer', '/file-charge',
  '/noc-fee', '/approval-letter',
];

export const SCAM_QUERY_PATHS: readonly string[] = [
  '/pay?orderNo=', '/recharge?uid=', '/fee?app=', '/payment.php?id=', '/checkout?ref=',
];

export const NBFC_HOST_WORDS: readonly string[] = [
  'loan', 'loans', 'finance', 'approval', 'personalloan', 'instantloan', 'loanoffer', 'credit', 'disbursal',
];

/** Telegram channel name stems, by what the channel is about; a number is appended. */
export const TELEGRAM_GAMBLING: readonly string[] = [
  'royal_win_official', 'mahadev_book_id', 'cricket_fixed_tips', 'ipl_sure_win', 'teenpatti_deposit',
  'satta_king_fast', 'kalyan_matka_open', 'aviator_predictor', 'colour_prediction', 'daman_games_vip',
  'tiranga_win_daily', 'reddy_anna_book', 'lotus_exch_id', 'rummy_cash_loot', 'casino_bonus_india',
];

export const TELEGRAM_MULE: readonly string[] = [
  'account_kiraye_pe', 'current_account_rent', 'bank_account_buyer', 'usdt_inr_exchange', 'gaming_deposit_agent',
  'payin_payout_services', 'savings_account_sale', 'upi_id_rent', 'corporate_account_deal', 'escrow_deals_india',
  'fund_routing_work', 'tpa_account_wanted', 'p2p_usdt_seller', 'gaming_payin_setup', 'cash_withdrawal_work',
];

export const TELEGRAM_PHISHING: readonly string[] = [
  'kyc_update_help', 'rewards_points_redeem', 'refund_helpdesk', 'electricity_bill_update', 'fastag_recharge_help',
  'yono_support_team', 'pan_link_service', 'bank_customer_care',
];

export const TELEGRAM_JOB: readonly string[] = [
  'parttime_job', 'wfh_task', 'daily_earning', 'hotel_review_job', 'youtube_like_task', 'prepaid_task_group',
  'amazon_review_work', 'data_entry_job', 'housewife_earning',
];

export const TELEGRAM_INVEST: readonly string[] = [
  'stock_tips', 'crypto_signals', 'ipo_allotment', 'option_trading_calls', 'usdt_double', 'forex_vip_signals',
  'banknifty_jackpot', 'sebi_registered_tips', 'bitcoin_mining_profit',
];

export const TELEGRAM_LOAN: readonly string[] = [
  'instant_loan_approval', 'loan_without_cibil', 'personal_loan_help', 'loan_app_support', 'aadhaar_loan_fast',
];

/** Forums, paste pages and complaint boards that publish long lists of reported UPI IDs. */
export const COMPLAINT_HOSTS: readonly string[] = [
  'scamupi-list.com', 'fraudupiids.in', 'upiscamreport.net', 'complaintboard.in', 'paste.pics',
  'consumercomplaints.org.in', 'scamwatch.in', 'fraudalert-forum.in',
];

/** Betting-side pages that publish the current deposit UPI IDs of many operators. */
export const GAMBLING_LIST_HOSTS: readonly string[] = [
  'bettingpayid.xyz', 'depositid-list.online', 'sattaking-result.net', 'matkapayid.live',
];

export const AGGREGATOR_SLUGS: readonly string[] = [
  'fraud-upi-ids', 'payment-ids', 'deposit-upi-list', 'scammer-upi-list', 'reported-upi', 'latest-pay-ids',
  'blocked-upi-ids', 'fake-loan-app-upi', 'betting-deposit-ids', 'cheating-upi-ids',
];

export const TELEGRAM_AGGREGATOR: readonly string[] = [
  'daily_deposit_upi_list', 'fresh_upi_ids', 'all_gaming_payids', 'upi_id_dump', 'bulk_payin_ids',
];

/** Small-shop words for merchant-style handles. */
export const SHOP_WORDS: readonly string[] = [
  'shree', 'shri', 'new', 'jai', 'maa', 'om', 'sai', 'balaji', 'ganesh', 'durga', 'laxmi', 'krishna', 'hanuman',
  'ambika', 'bharat', 'national', 'royal', 'super', 'star', 'city', 'metro', 'janta', 'apna', 'sonu', 'raj',
];

export const SHOP_KINDS: readonly string[] = [
  'traders', 'store', 'stores', 'mobiles', 'enterprises', 'telecom', 'kirana', 'general', 'medical', 'electronics',
  'fashion', 'agency', 'services', 'mart', 'garments', 'communication', 'recharge', 'infotech',
];
