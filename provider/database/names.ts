// Every Tiger Cloud service's database and admin role (a fork's initial password is that role's).
export const DATABASE = "tsdb";
export const USERNAME = "tsdbadmin";
